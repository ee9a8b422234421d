"""The prompts library: named prompts in Markdown, used as a run's system prompt or, when they
hold placeholders, as templates of the user's message (``openheim prompts``, ``run
--prompt-name``, ``run --template``, slash commands in the chat and over ACP).

- ``library``: ``PromptLibrary``, ``NamedPrompt``, the sources and what an untrusted project's
  prompts may do;
- ``template``: placeholders, declared arguments and expansion;
- ``files``: adding, creating and removing the user's prompt files;
- ``commands``: templates as slash commands (the chat, ACP);
- ``project``: the library of a session's settings (its project, trusted or not);
- ``builder``: ``PromptBuilder``, the system prompt assembled from files in a stable order.

The package front imports nothing, so the system prompt's builder loads without the library.
"""

"""The interactive chat shared by the terminal UI (``openheim.tui``) and the plain REPL
(``openheim.repl``): the commands, the session they drive and the input history. A shared
package, no surface: it imports neither of them, nor Textual."""

"""The shell parser: every command a line runs is found, quoting is honoured, doubt is an error."""

from __future__ import annotations

import re

import pytest

from openheim.safety.shell_words import Command, ShellParseError, Word, parse, quote
from openheim.safety.wrappers import expand


def texts(line: str) -> list[list[str]]:
    return [[w.text for w in c.words] for c in parse(line)]


def test_words_of_a_simple_command() -> None:
    assert texts("git status  --short") == [["git", "status", "--short"]]


def test_a_quoted_semicolon_is_one_argument_of_one_command() -> None:
    assert texts('echo "a; rm -rf /"') == [["echo", "a; rm -rf /"]]


def test_quotes_and_escapes_are_removed_like_the_shell_does() -> None:
    line = r"""echo 'a b' c\ d "e\"f" 'g'"h" """
    assert texts(line) == [["echo", "a b", "c d", 'e"f', "gh"]]


@pytest.mark.parametrize("sep", ["; ", " && ", " || ", " | ", "\n", " & ", " |& ", ";\n\n"])
def test_every_separator_splits_commands(sep: str) -> None:
    assert texts(f"ls -l{sep}rm x") == [["ls", "-l"], ["rm", "x"]]


def test_command_substitution_runs_before_the_command_holding_it() -> None:
    commands = parse("echo $(rm -rf x) done")
    assert [[w.text for w in c.words] for c in commands] == [
        ["rm", "-rf", "x"],
        ["echo", "$(rm -rf x)", "done"],
    ]
    assert [w.static for w in commands[1].words] == [True, False, True]


@pytest.mark.parametrize("line", ["echo `rm x`", 'echo "`rm x`"', 'echo "$(rm x)"', "cat <(rm x)"])
def test_backticks_quoted_and_process_substitutions_are_found(line: str) -> None:
    assert texts(line)[0] == ["rm", "x"]


def test_nested_substitutions_are_all_found() -> None:
    assert [c.name for c in parse("a $(b $(c) `d`)")] == ["c", "d", "b", "a"]


def test_subshell_commands_and_its_redirection() -> None:
    commands = parse("(cd x && ls) > out 2>&1")
    assert [c.name for c in commands] == ["cd", "ls", ""]
    assert commands[2].redirects[0].op == ">"
    assert commands[2].redirects[0].target.text == "out"


def test_redirections_are_kept_apart_and_descriptor_copies_dropped() -> None:
    (command,) = parse("sort < in.txt > out.txt 2>&1 >> log")
    assert [w.text for w in command.words] == ["sort"]
    assert [(r.op, r.target.text, r.writes) for r in command.redirects] == [
        ("<", "in.txt", False),
        (">", "out.txt", True),
        (">>", "log", True),
    ]


def test_a_digit_is_a_descriptor_only_when_it_touches_the_operator() -> None:
    assert texts("echo 2 > x") == [["echo", "2"]]
    (command,) = parse("echo hi 2>err")
    assert [w.text for w in command.words] == ["echo", "hi"]
    assert command.redirects[0].target.text == "err"


def test_leading_assignments_are_not_words() -> None:
    (command,) = parse('FOO=1 BAR="x y" git status PAGER=cat')
    assert [w.text for w in command.assignments] == ["FOO=1", "BAR=x y"]
    assert [w.text for w in command.words] == ["git", "status", "PAGER=cat"]


@pytest.mark.parametrize(
    ("word", "static"),
    [
        ("$HOME", False),
        ("${HOME}", False),
        ("*.py", False),
        ("~/x", False),
        ("{a,b}", False),
        ("$((1+2))", False),
        ("'$HOME'", True),
        ('"*.py"', True),
        ("a$", True),
        ("plain", True),
    ],
)
def test_words_computed_at_run_time_are_not_static(word: str, static: bool) -> None:
    (command,) = parse(f"echo {word}")
    assert command.words[1].static is static


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("if git status; then ls; else make; fi", ["git", "ls", "make"]),
        ("for f in $(ls); do rm $f; done", ["ls", "rm"]),
        ("while true; do date; done", ["true", "date"]),
        ("{ a; b; }", ["a", "b"]),
        ("! grep x f", ["grep"]),
        ("'if' x", ["if"]),
    ],
)
def test_control_flow_words_are_dropped_and_the_commands_kept(line: str, names: list[str]) -> None:
    assert [c.name for c in parse(line)] == names


def test_comments_and_line_continuations() -> None:
    assert texts("ls # rm -rf /") == [["ls"]]
    assert texts("echo a#b") == [["echo", "a#b"]]
    assert texts("git \\\n status") == [["git", "status"]]


def test_an_empty_line_runs_nothing() -> None:
    assert parse("  \n # only a comment\n") == ()


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("cat <<EOF\nrm -rf /\nEOF", "here-documents"),
        ('echo "unclosed', "unclosed double quote"),
        ("echo 'unclosed", "unclosed single quote"),
        ("echo `unclosed", "unclosed backtick"),
        ("(ls", "missing ')'"),
        ("ls )", "unbalanced ')'"),
        ("case $x in a) ls;; esac", "'case'"),
        (":(){ :|:& };:", "function definition"),
        ("echo ${x:-$(rm -rf /)}", "parameter expansion"),
        ("echo $(( $(rm) + 1 ))", "arithmetic"),
        ("ls >", "no target"),
        ("echo " + "$(" * 20 + ")" * 20, "nesting"),
    ],
)
def test_what_is_not_analysed_raises(line: str, why: str) -> None:
    with pytest.raises(ShellParseError, match=re.escape(why)):
        parse(line)


def test_command_name_is_the_base_name_and_str_requotes() -> None:
    (command,) = parse("/bin/rm 'a b' $X")
    assert command.name == "rm"
    assert str(command) == "/bin/rm 'a b' $X"
    assert Command(()).name == ""
    assert quote("git") == "git"
    assert quote("*") == "'*'"


def test_words_compare_by_value() -> None:
    assert parse("echo 'x'")[0].words[1] == Word("x", True)


@pytest.mark.parametrize(
    ("line", "seen"),
    [
        ("sudo -u root rm -rf /", ["rm", "-rf", "/"]),
        ("env A=1 -u B rm x", ["rm", "x"]),
        ("timeout -s KILL 5 rm x", ["rm", "x"]),
        ("xargs -n 1 rm -f", ["rm", "-f"]),
        ("nice -n 5 nohup rm x", ["rm", "x"]),
        ("bash -c 'rm x'", ["rm", "x"]),
        ("sh -e -c 'rm x'", ["rm", "x"]),
        ("sudo bash -lc 'rm x'", ["rm", "x"]),
        ("eval rm x", ["rm", "x"]),
        ("bash script.sh", ["bash", "script.sh"]),
        ("sudo", ["sudo"]),
    ],
)
def test_expand_sees_through_wrappers(line: str, seen: list[str]) -> None:
    assert [w.text for w in expand(parse(line))[0].words] == seen


def test_expand_splits_a_shell_script_into_its_commands() -> None:
    assert [c.name for c in expand(parse("bash -c 'ls; rm x' && make"))] == ["ls", "rm", "make"]


@pytest.mark.parametrize("line", ['sh -c "$CMD"', "eval $X", "bash -c 'echo \"x'"])
def test_expand_refuses_scripts_it_cannot_read(line: str) -> None:
    with pytest.raises(ShellParseError):
        expand(parse(line))

from __future__ import annotations

from pathlib import Path

import pytest

from openheim.errors import SandboxError, ToolError
from openheim.tools.base import ToolContext
from openheim.tools.builtin.search import MAX_LINE_CHARS, MAX_MATCHES, search
from tests.tools.support import ok


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


async def test_output_format_and_order(ctx: ToolContext, work: Path) -> None:
    write(work, {"b.py": "x = 1\nneedle = 2\n", "a/c.py": "needle\r\nother\nneedle again\n"})
    text = await ok(search, ctx, pattern="needle")
    assert text.splitlines() == ["a/c.py:1: needle", "a/c.py:3: needle again", "b.py:2: needle = 2"]


async def test_regex_ignore_case_path_and_glob(ctx: ToolContext, work: Path) -> None:
    write(work, {"src/a.py": "def Foo():\n", "src/b.ts": "foo()\n", "docs/x.py": "foo\n"})
    assert await ok(search, ctx, pattern=r"^def \w+") == "src/a.py:1: def Foo():"
    both = await ok(search, ctx, pattern="foo", ignore_case=True, path="src")
    assert both.splitlines() == ["src/a.py:1: def Foo():", "src/b.ts:1: foo()"]
    assert (await ok(search, ctx, pattern="foo", glob="*.py")).splitlines() == ["docs/x.py:1: foo"]
    scoped = await ok(search, ctx, pattern="(?i)foo", glob="src/**/*.py")
    assert scoped.splitlines() == ["src/a.py:1: def Foo():"]
    assert await ok(search, ctx, pattern="foo", path="src/b.ts") == "src/b.ts:1: foo()"


async def test_root_gitignore_is_honoured(ctx: ToolContext, work: Path) -> None:
    write(
        work,
        {
            ".gitignore": "*.log\nbuild/\n/top.txt\n!keep.log\n",
            "app.log": "hit\n",
            "keep.log": "hit\n",
            "build/out.py": "hit\n",
            "top.txt": "hit\n",
            "sub/top.txt": "hit\n",
            "sub/build.py": "hit\n",
            ".git/config": "hit\n",
        },
    )
    text = await ok(search, ctx, pattern="hit")
    assert text.splitlines() == ["keep.log:1: hit", "sub/build.py:1: hit", "sub/top.txt:1: hit"]


async def test_nested_gitignore_applies_below_its_folder_and_overrides(
    ctx: ToolContext, work: Path
) -> None:
    write(
        work,
        {
            ".gitignore": "*.gen\n",
            "pkg/.gitignore": "secret.txt\n!wanted.gen\n/local/\n",
            "pkg/secret.txt": "hit\n",
            "secret.txt": "hit\n",
            "pkg/a.gen": "hit\n",
            "pkg/wanted.gen": "hit\n",
            "pkg/local/x.txt": "hit\n",
            "pkg/deep/local/y.txt": "hit\n",
            "other/wanted.gen": "hit\n",
        },
    )
    expected = ["pkg/deep/local/y.txt:1: hit", "pkg/wanted.gen:1: hit", "secret.txt:1: hit"]
    assert (await ok(search, ctx, pattern="hit")).splitlines() == expected
    # searching from inside pkg still applies the root's and pkg's rules
    assert (await ok(search, ctx, pattern="hit", path="pkg")).splitlines() == expected[:2]


async def test_binary_files_and_symlinks_are_skipped(
    ctx: ToolContext, work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("hit outside\n")
    write(work, {"bin.dat": b"hit\x00\x01", "text.txt": "hit\n"})
    (work / "link.txt").symlink_to(outside / "secret.txt")
    (work / "linkdir").symlink_to(outside)
    assert await ok(search, ctx, pattern="hit") == "text.txt:1: hit"


async def test_matches_are_capped(ctx: ToolContext, work: Path) -> None:
    write(work, {"a.txt": "match\n" * 150, "b.txt": "match\n" * 150})
    lines = (await ok(search, ctx, pattern="match")).splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[0] == "a.txt:1: match" and lines[MAX_MATCHES - 1] == "b.txt:50: match"
    assert lines[-1].startswith(f"[stopped at {MAX_MATCHES} matches")


async def test_long_lines_are_cut_around_the_match(ctx: ToolContext, work: Path) -> None:
    write(work, {"min.js": "a" * 5000 + "NEEDLE" + "b" * 5000 + "\n", "s.js": "x" * 400 + "\n"})
    hit = await ok(search, ctx, pattern="NEEDLE")
    text = hit.removeprefix("min.js:1: ")
    assert "NEEDLE" in text and text.startswith("…") and text.endswith("…")
    assert len(text) == MAX_LINE_CHARS + 2
    start = await ok(search, ctx, pattern="^x")
    assert start == "s.js:1: " + "x" * MAX_LINE_CHARS + "…"


async def test_no_matches_says_where_it_looked(ctx: ToolContext, work: Path) -> None:
    write(work, {"a.txt": "nothing\n", "b.txt": "here\n"})
    assert await ok(search, ctx, pattern="absent") == "no matches for 'absent' in 2 files under ."


async def test_invalid_regex_names_the_problem(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid regular expression 'foo\(': missing \)") as err:
        await ok(search, ctx, pattern="foo(")
    assert err.value.hint and "escape" in err.value.hint


async def test_bad_paths(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="nope does not exist"):
        await ok(search, ctx, pattern="x", path="nope")
    with pytest.raises(SandboxError):
        await ok(search, ctx, pattern="root", path="/etc")


async def test_an_ignored_folder_named_explicitly_is_searched(ctx: ToolContext, work: Path) -> None:
    write(
        work,
        {
            ".gitignore": "vendor/\n*.log\n",
            "vendor/lib/.gitignore": "generated/\n",
            "vendor/lib/code.py": "hit\n",
            "vendor/lib/generated/x.py": "hit\n",
            "app.py": "hit\n",
        },
    )
    assert await ok(search, ctx, pattern="hit") == "app.py:1: hit"
    assert await ok(search, ctx, pattern="hit", path="vendor") == "vendor/lib/code.py:1: hit"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", r"backreferences such as \1 are not supported"),
        ("(?=x)", "lookahead (?=...) is not supported"),
        ("(?!x)", "negative lookahead (?!...) is not supported"),
        ("(?<=x)y", "lookbehind (?<=...) is not supported"),
        ("(?<!x)y", "negative lookbehind (?<!...) is not supported"),
        ("(?P<n>x)(?P=n)", "named backreference (?P=name) is not supported"),
        ("(?>x)", "atomic group (?>...) is not supported"),
        ("(?#note)x", "comment group (?#...) is not supported"),
        ("a++", "possessive quantifiers such as ++ are not supported"),
        (r"x\Z", r"\Z is not supported; write \z for the end of the text"),
        ("(?x) a", "the group or flag (?x is not supported (flags: i, m, s, U)"),
        ("a{1001}", "invalid repetition size: {1001}"),
        ("\ud800", "it contains a lone surrogate (not valid Unicode)"),
    ],
)
async def test_unsupported_constructs_are_named(
    ctx: ToolContext, pattern: str, reason: str
) -> None:
    with pytest.raises(ToolError) as err:
        await ok(search, ctx, pattern=pattern)
    assert err.value.message == f"invalid regular expression {pattern!r}: {reason}"
    assert err.value.hint and "RE2" in err.value.hint and "lookaround" in err.value.hint


async def test_classes_are_ascii_and_unicode_is_named(ctx: ToolContext, work: Path) -> None:
    write(work, {"u.txt": "größe 42\n", "a.txt": "size 42\n"})
    assert await ok(search, ctx, pattern=r"^\w+ \d+$") == "a.txt:1: size 42"
    both = await ok(search, ctx, pattern=r"^\pL+ \d+$")
    assert both.splitlines() == ["a.txt:1: size 42", "u.txt:1: größe 42"]


async def test_crlf_files_and_text_anchors_match_per_line(ctx: ToolContext, work: Path) -> None:
    write(work, {"w.txt": b"first end\r\nsecond end\r\n", "u.txt": "one\ntwo end\n"})
    ends = await ok(search, ctx, pattern="end$")
    assert ends.splitlines() == ["u.txt:2: two end", "w.txt:1: first end", "w.txt:2: second end"]
    assert await ok(search, ctx, pattern=r"\Atwo") == "u.txt:2: two end"
    assert await ok(search, ctx, pattern=r"two end\z") == "u.txt:2: two end"


async def test_invalid_utf8_is_matched_as_replacement_characters(
    ctx: ToolContext, work: Path
) -> None:
    write(work, {"latin1.txt": b"caf\xe9 au lait\n"})
    assert await ok(search, ctx, pattern="caf. au") == "latin1.txt:1: caf\ufffd au lait"


async def test_lines_over_a_mebibyte_are_counted(ctx: ToolContext, work: Path) -> None:
    write(work, {"min.js": "x" * (1024 * 1024 + 1) + "\nneedle\n"})
    text = await ok(search, ctx, pattern="needle|x")
    assert text.splitlines() == ["min.js:2: needle", "[skipped 1 line over 1 MiB]"]


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # pathspec on [[:alpha:]]
async def test_invalid_gitignore_lines_are_skipped(ctx: ToolContext, work: Path) -> None:
    write(
        work, {".gitignore": "[z-a]\n*.log\nx\\\n[[:alpha:]]\n", "a.log": "hit\n", "b.txt": "hit\n"}
    )
    assert await ok(search, ctx, pattern="hit") == "b.txt:1: hit"

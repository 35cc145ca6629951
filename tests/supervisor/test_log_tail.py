"""The per-run log tail: whole lines however the writes are cut, bounded work per poll."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.supervisor.log_tail import FileTail
from headroom.supervisor.statefile import read_state

LINE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40
)  # no lone surrogates: they cannot be written as UTF-8 (Hypothesis found one)


@settings(max_examples=80, deadline=None)
@given(lines=st.lists(LINE, max_size=20), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_lines_come_back_whole_however_the_writes_are_cut(tmp_path_factory, lines, cuts):
    path = tmp_path_factory.mktemp("t") / "run.log"
    data = "".join(line + "\n" for line in lines).encode()
    tail = FileTail(path, max_bytes=64)
    got: list[str] = []
    written = 0
    with open(path, "wb") as f:
        for cut in sorted(cuts) + [len(data)]:
            f.write(data[written:cut] if cut > written else b"")
            f.flush()
            written = max(written, cut)
            for _ in range(len(data) // 64 + 2):
                got += tail.read_lines()
    got += tail.read_lines(final=True)
    assert got == lines


def test_truncation_starts_again_and_a_flood_is_skipped_with_a_count(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("a\nb\n")
    tail = FileTail(path, max_bytes=1024, max_backlog_bytes=4096)
    assert tail.read_lines() == ["a", "b"]
    path.write_text("c\n")  # copytruncate-style rotation
    assert tail.read_lines() == ["c"]
    with open(path, "a") as f:
        f.write("x" * 99 + "\n" * 1 + ("y" * 99 + "\n") * 100)
    lines = tail.read_lines()
    assert tail.skipped_bytes > 0
    assert len("".join(lines)) <= 1024
    assert all(set(line) <= {"y"} for line in lines[1:])


def test_very_long_lines_are_cut(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("z" * 5000 + "\nok\n")
    tail = FileTail(path, max_line=100)
    lines = tail.read_lines() + tail.read_lines()
    assert lines[0] == "z" * 100
    assert lines[-1] == "ok"


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.builds(
            json.dumps,
            st.recursive(
                st.none() | st.integers() | st.text(max_size=5),
                lambda children: (
                    st.lists(children, max_size=3)
                    | st.dictionaries(
                        st.sampled_from(["pid", "port", "pgid", "url", "argv"]),
                        children,
                        max_size=5,
                    )
                ),
                max_leaves=8,
            ),
        ).map(str.encode),
    )
)
def test_a_damaged_state_file_reads_as_none_never_raises(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("s")
    (folder / "server-8000.json").write_bytes(raw)
    record = read_state(8000, folder)
    assert record is None or isinstance(record.pid, int)


def test_old_run_logs_are_pruned_newest_kept(tmp_path):
    from headroom.supervisor.run_journal import prune_logs

    for stamp in ("20261129-120000-a", "20261129-130000-b", "20261129-110000-c"):
        (tmp_path / f"{stamp}.log").write_text("x")
    (tmp_path / "notes.txt").write_text("keep me")
    assert prune_logs(tmp_path, keep=1) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20261129-130000-b.log", "notes.txt"]

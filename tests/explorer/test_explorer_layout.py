from explorer.runtime import verdict


def test_exit_code_table():
    assert verdict.EXIT_CODES == {  # the engine's; the command line adds 1, 2 and 14 (serq/cli/exits.py)
        "pass": 0, "deadlock": 10, "livelock": 11, "violation": 12, "bound": 13, "nondeterministic": 15,
        "interrupted": 16, "inconclusive": 17, "failed": 18,
    }
    assert [e.code for e in verdict.EXITS] == sorted(verdict.EXIT_CODES.values())
    assert verdict.EXIT_WORKER_LOST == verdict.EXIT_FAILED == 18
    assert verdict.exit_code("bound") == 13


def test_arena_levels_take_turns_and_keep_the_rows_type():
    import numpy as np

    from explorer.strategies.arrays.narrow import Arena, Raw

    a = Arena(1024)  # 1 KiB: 16 rows of 8 int64 columns
    rows = np.arange(40, dtype=np.int64).reshape(5, 8)
    a.next_level()
    first = Raw(rows, np.array([4, 0]), a.take(2, 8, rows.dtype))
    assert first.rows(0, 2).tolist() == [rows[4].tolist(), rows[0].tolist()]
    assert a.take(15, 8) is None  # 2 taken, 14 left
    a.next_level()  # the next level writes the other buffer: the first level's rows stay as they were
    second = Raw(rows, np.array([1]), a.take(1, 8, rows.dtype))
    assert first.rows(0, 2).tolist() == [rows[4].tolist(), rows[0].tolist()]
    assert second.rows(0, 1).tolist() == [rows[1].tolist()]
    a.next_level()  # two levels on, the first buffer is written again
    assert np.shares_memory(a.take(1, 8), first.data)
    small = np.arange(16, dtype=np.int8).reshape(2, 8)
    r = Raw(small, np.array([1]), a.take(1, 8, small.dtype))  # another type: a buffer of its own
    assert r.data.dtype == np.int8 and r.rows(0, 1).tolist() == [small[1].tolist()]


def test_a_level_that_outgrew_the_arena_hands_its_pages_back_as_read():
    import numpy as np

    from explorer.strategies.arrays.narrow import Arena, Raw

    a = Arena(1 << 20)  # 1 MiB: 1,016 rows of 129 int64 columns
    rows = np.arange(129 * 50, dtype=np.int64).reshape(50, 129)
    a.next_level()
    blocks = []
    while (room := a.take(50, 129)) is not None:
        blocks.append(Raw(rows, np.arange(50), room))
    assert len(blocks) == 20 and a.take(1, 129) is None  # full: the rest of the level is packed
    a.next_level()  # the full level is read now
    a.consumed(500)
    assert a.freed == (500 * 129 * 8) // 4096 * 4096
    assert not blocks[0].rows(0, 1).any()  # handed back: reads as zeros
    assert (blocks[-1].rows(0, 50) == rows).all()  # not read yet: intact
    b = Arena(1 << 20)  # a level that fits keeps its pages
    b.next_level()
    kept = Raw(rows, np.arange(50), b.take(50, 129))
    b.next_level()
    b.consumed(50)
    assert b.freed == 0 and (kept.rows(0, 50) == rows).all()


def test_unpacked_rows_take_the_narrowest_type_their_levels_allow():
    import numpy as np

    from explorer.strategies.arrays.narrow import Arena, Raw

    a = Arena(1024, np.int8)  # int8 rows until a block does not fit
    rows = np.array([[1, -2, 3], [100, 0, -128], [300, 1, 2]], np.int64)
    a.next_level()
    ok = Raw.fit(rows, np.array([1, 0]), a.take(2, 3))
    assert ok.data.dtype == np.int8 and ok.rows(0, 2).dtype == np.int64
    assert ok.rows(0, 2).tolist() == [rows[1].tolist(), rows[0].tolist()]
    assert Raw.fit(rows, np.array([0, 2]), a.take(2, 3)) is None  # 300: not an int8
    a.widen(rows[[0, 2]])
    assert a.take(1, 3) is None  # the rest of this level is packed
    a.next_level()
    wide = Raw.fit(rows, np.array([2]), a.take(1, 3))
    assert wide.data.dtype == np.int16 and wide.rows(0, 1).tolist() == [rows[2].tolist()]
    a.widen(np.array([[-5, 7]]))  # a narrower block never narrows the type back
    a.next_level()
    assert a.take(1, 3).dtype == np.int16
    big = np.array([[2 ** 40]], np.int64)
    a.widen(big)
    a.next_level()
    assert Raw.fit(big, np.array([0]), a.take(1, 1)).rows(0, 1).tolist() == [[2 ** 40]]

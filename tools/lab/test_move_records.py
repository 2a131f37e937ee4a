"""tools.lab.move_records: records move whole, nothing is lost, bad input is named."""
import gzip
import json
import os
import tempfile
import unittest

from tools.lab.move_records import MoveError, move_records


def _rec(sid, at, target="a.t1"):
    return {"task": "fc", "target": target, "sid": sid, "latency_s": {"mean": 1e-3},
            "measured_at": at}


class MoveRecordsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.data = self.tmp.name
        os.makedirs(os.path.join(self.data, "targets"))
        os.makedirs(os.path.join(self.data, "a.t1"))
        with open(os.path.join(self.data, "targets", "b.t1.json"), "w") as f:
            f.write("{}")
        self.write_chunk("records-s1of1-0001.jsonl.gz",
                         [_rec("1", "2026-12-03T10:00:00Z"), _rec("2", "2026-12-03T11:00:00Z"),
                          _rec("3", "2026-12-03T12:00:00Z")])
        self.write_chunk("records-s1of1-0002.jsonl.gz", [_rec("4", "2026-12-03T09:00:00Z")])
        with open(os.path.join(self.data, "a.t1", "failures.jsonl"), "w") as f:
            for r in (_rec("5", "2026-12-03T08:00:00Z"), _rec("6", "2026-12-03T13:00:00Z")):
                f.write(json.dumps(r) + "\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write_chunk(self, name, recs):
        with gzip.open(os.path.join(self.data, "a.t1", name), "wt") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")

    def read(self, *parts):
        path = os.path.join(self.data, *parts)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_moves_the_window_whole_and_keeps_the_rest(self):
        r = move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z",
                         "2026-12-03T13:00:00Z")
        self.assertEqual(r, {"records": 2, "failures": 0, "chunks": ["records-s1of1-0001.jsonl.gz"]})
        moved = self.read("b.t1", "records-s1of1-0001.jsonl.gz")
        self.assertEqual([m["sid"] for m in moved], ["2", "3"])
        self.assertTrue(all(m["target"] == "b.t1" for m in moved))
        self.assertEqual(moved[0]["latency_s"], {"mean": 1e-3})
        self.assertEqual([k["sid"] for k in self.read("a.t1", "records-s1of1-0001.jsonl.gz")], ["1"])
        self.assertEqual(len(self.read("a.t1", "records-s1of1-0002.jsonl.gz")), 1)
        # the failure at 13:00 is outside [since, until)
        self.assertEqual(len(self.read("a.t1", "failures.jsonl")), 2)
        # nothing is left in the window: a second run moves nothing
        self.assertEqual(move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z",
                                      "2026-12-03T13:00:00Z")["records"], 0)

    def test_failures_move_and_a_chunk_emptied_is_removed(self):
        r = move_records(self.data, "a.t1", "b.t1", "2026-12-03T00:00:00Z")
        self.assertEqual((r["records"], r["failures"]), (4, 2))
        self.assertFalse(os.path.exists(os.path.join(self.data, "a.t1", "records-s1of1-0001.jsonl.gz")))
        self.assertEqual(self.read("a.t1", "failures.jsonl"), [])
        self.assertEqual(len(self.read("b.t1", "failures.jsonl")), 2)

    def test_dry_run_changes_nothing(self):
        before = self.read("a.t1", "records-s1of1-0001.jsonl.gz")
        r = move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z", dry_run=True)
        self.assertEqual(r["records"], 2)
        self.assertEqual(self.read("a.t1", "records-s1of1-0001.jsonl.gz"), before)
        self.assertFalse(os.path.exists(os.path.join(self.data, "b.t1")))

    def test_bad_input_is_named(self):
        with self.assertRaisesRegex(MoveError, r"targets/c\.t1\.json: no such target"):
            move_records(self.data, "a.t1", "c.t1", "2026-12-03T11:00:00Z")
        with self.assertRaisesRegex(MoveError, r"--since: expected YYYY-MM-DDTHH:MM:SSZ"):
            move_records(self.data, "a.t1", "b.t1", "yesterday")
        with gzip.open(os.path.join(self.data, "a.t1", "records-s1of1-0003.jsonl.gz"), "wt") as f:
            f.write(json.dumps(_rec("7", "2026-12-03T10:00:00Z")) + "\n{not json\n")
        with self.assertRaisesRegex(MoveError, r"records-s1of1-0003\.jsonl\.gz:2: not a record"):
            move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z")
        os.remove(os.path.join(self.data, "a.t1", "records-s1of1-0003.jsonl.gz"))
        open(os.path.join(self.data, "a.t1", "records-s1of1-0004.jsonl"), "w").close()
        with self.assertRaisesRegex(MoveError, "open chunk"):
            move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z")
        # nothing was changed by the refused runs
        self.assertEqual(len(self.read("a.t1", "records-s1of1-0001.jsonl.gz")), 3)

    def test_refuses_to_overwrite_a_chunk(self):
        os.makedirs(os.path.join(self.data, "b.t1"))
        open(os.path.join(self.data, "b.t1", "records-s1of1-0001.jsonl.gz"), "w").close()
        with self.assertRaisesRegex(MoveError, r"b\.t1/records-s1of1-0001\.jsonl\.gz: exists"):
            move_records(self.data, "a.t1", "b.t1", "2026-12-03T11:00:00Z")


if __name__ == "__main__":
    unittest.main()

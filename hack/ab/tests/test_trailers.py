"""hack/stack/trailers.py: the patches' trailers against each other and the
docs, on a series of its own and on the project's."""
import importlib.util
import os
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("trailers", os.path.join(ROOT, "hack", "stack", "trailers.py"))
trailers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trailers)


def patch(subject, upstream, author="a@b", signed="a@b"):
    return (f"From 0 Mon Sep 17 00:00:00 2001\nFrom: a <{author}>\nSubject: [PATCH] {subject}\n\n"
            f"Why.\n\nUpstream: {upstream}\nDrop-when: never\n\nSigned-off-by: a <{signed}>\n---\n x | 1 +\n")


class TrailersTest(unittest.TestCase):
    def series(self, patches, proposals="", table=None):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        os.makedirs(os.path.join(d, "patches", "containerd"))
        os.makedirs(os.path.join(d, "docs", "proposals"))
        for name, text in patches.items():
            with open(os.path.join(d, "patches", name), "w") as f:
                f.write(text)
        with open(os.path.join(d, "patches", "series"), "w") as f:
            f.write("# the order\n" + "".join(f"{n}\n" for n in sorted(patches)))
        with open(os.path.join(d, "docs", "proposals", "p.md"), "w") as f:
            f.write(proposals)
        rows = table or {n[:4]: patches[n].split("Upstream: ")[1].split()[0].rstrip(",") for n in patches}
        with open(os.path.join(d, "docs", "patches.md"), "w") as f:
            f.write("| patch | what | upstream |\n| --- | --- | --- |\n")
            for num, v in rows.items():
                f.write(f"| {num} | x | {v} |\n")
        return d

    def test_consistent(self):
        d = self.series({"0001-a.patch": patch("a", "yes"), "0002-b.patch": patch("b", "yes, with 0001"),
                         "0003-c.patch": patch("c", "no (ours)")}, proposals="0001-a.patch 0002-b.patch")
        self.assertEqual(trailers.check(d), [])

    def test_yes_with_a_patch_not_for_upstream(self):
        d = self.series({"0001-a.patch": patch("a", "no (ours)"), "0002-b.patch": patch("b", "yes"),
                         "0003-c.patch": patch("c", "yes, with the queue (0001-0002)")},
                        proposals="0002-b.patch 0003-c.patch")
        f = trailers.check(d)
        self.assertEqual(len(f), 1, f)
        self.assertIn("0003-c.patch: Upstream: yes with 0001", f[0])

    def test_yes_without_a_proposal(self):
        d = self.series({"0001-a.patch": patch("a", "yes")})
        self.assertEqual(trailers.check(d), ["0001-a.patch: Upstream: yes, but no docs/proposals/*.md names it"])

    def test_author_not_signed_off(self):
        d = self.series({"0001-a.patch": patch("a", "no (ours)", author="x@y")})
        f = trailers.check(d)
        self.assertEqual(len(f), 1, f)
        self.assertIn("author <x@y> is not among the sign-offs", f[0])

    def test_docs_table_disagrees(self):
        d = self.series({"0001-a.patch": patch("a", "no (ours)"), "0002-b.patch": patch("b", "no (ours)")},
                        table={"0001": "yes"})
        self.assertEqual(trailers.check(d), ["docs/patches.md: 0001 says yes, its Upstream: trailer no",
                                             "docs/patches.md: no row for 0002"])

    def test_trailer_missing_or_unclear(self):
        text = patch("a", "maybe").replace("Drop-when: never\n", "")
        d = self.series({"0001-a.patch": text}, table={"0001": "no"})
        f = trailers.check(d)
        self.assertIn("patches/0001-a.patch: 0 Drop-when: trailers, want 1", f)
        self.assertIn("patches/0001-a.patch: Upstream: says neither yes nor no: 'maybe'", f)

    def test_continuation_lines(self):
        text = patch("a", "yes, with the first (0001,\n 0002)")
        self.assertEqual(trailers.named(trailers.trailers(trailers.message(text)[1])["Upstream"][0]), {"0001", "0002"})

    def test_the_project_series(self):
        self.assertEqual(trailers.check(ROOT), [])


if __name__ == "__main__":
    unittest.main()

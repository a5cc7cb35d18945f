import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import mkimage  # noqa: E402


def members(data):
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return {m.name: (t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()}


class MkimageTest(unittest.TestCase):
    def test_same_inputs_same_bytes(self):
        a = mkimage.build("ab/x:1", [mkimage.random_layer(0, 4096, "s")], {"Cmd": ["sh"]})
        b = mkimage.build("ab/x:1", [mkimage.random_layer(0, 4096, "s")], {"Cmd": ["sh"]})
        self.assertEqual(hashlib.sha256(a).digest(), hashlib.sha256(b).digest())

    def test_layout_digests_match(self):
        data = mkimage.build("ab/x:1", [mkimage.random_layer(i, 1000, 1) for i in range(3)], {})
        files = members(data)
        index = json.loads(files["index.json"])
        m = index["manifests"][0]
        self.assertEqual(m["annotations"]["io.containerd.image.name"], "docker.io/ab/x:1")
        manifest = files["blobs/sha256/" + m["digest"][7:]]
        self.assertEqual(len(manifest), m["size"])
        for desc in json.loads(manifest)["layers"]:
            blob = files["blobs/sha256/" + desc["digest"][7:]]
            self.assertEqual("sha256:" + hashlib.sha256(blob).hexdigest(), desc["digest"])
            self.assertEqual(len(blob), desc["size"])
        self.assertEqual(json.loads(files["manifest.json"])[0]["RepoTags"], ["ab/x:1"])

    def test_layer_from_dir_is_sorted_and_timeless(self):
        with tempfile.TemporaryDirectory() as d:
            for n in ("b", "a", "c/d"):
                os.makedirs(os.path.join(d, os.path.dirname(n)), exist_ok=True)
                with open(os.path.join(d, n), "w") as f:
                    f.write(n)
            os.symlink("a", os.path.join(d, "link"))
            with tarfile.open(fileobj=io.BytesIO(mkimage.layer_from_dir(d))) as t:
                names = [m.name for m in t.getmembers()]
                self.assertEqual(names, ["a", "b", "c", "c/d", "link"])
                self.assertTrue(all(m.mtime == 0 for m in t.getmembers()))

    def test_sizes(self):
        self.assertEqual(mkimage.parse_size("512KiB"), 512 << 10)
        self.assertEqual(mkimage.parse_size("10MiB"), 10 << 20)
        with self.assertRaises(ValueError):
            mkimage.parse_size("ten")

    def test_normalize(self):
        self.assertEqual(mkimage.normalize("busybox"), ("docker.io/library/busybox:latest", "latest"))
        self.assertEqual(mkimage.normalize("10.199.0.1:5000/p/x:2"), ("10.199.0.1:5000/p/x:2", "2"))


if __name__ == "__main__":
    unittest.main()

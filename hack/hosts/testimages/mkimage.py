#!/usr/bin/env python3
"""Write a docker-loadable image archive without a daemon.

The archive is an OCI image layout (oci-layout, index.json, blobs/) with a
docker-style manifest.json beside it, the format `docker save` writes, so that
`docker load` takes it on both image stores. Output is deterministic: the same
inputs give a byte-identical archive.

  mkimage.py --ref ab/busybox:latest --layer DIR [--layer DIR...] --cmd '["sh"]' -o out.tar
  mkimage.py --ref 10.199.0.1:5000/pull/small:latest --random-layers 1MiB,1MiB --seed 1 -o out.tar
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import random
import stat
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from ab import units  # noqa: E402  hack/ab/units.py: the one parser of sizes


def parse_size(text):
    """'512KiB' -> 524288; a plain number is bytes (ab.units)."""
    return units.size(text.strip(), plain=True)


def _tarinfo(name, st):
    ti = tarfile.TarInfo(name)
    ti.mode = stat.S_IMODE(st.st_mode)
    ti.uid, ti.gid = st.st_uid, st.st_gid
    ti.uname = ti.gname = ""
    ti.mtime = 0
    return ti


def layer_from_dir(root):
    """An uncompressed tar of root, entries sorted, times zeroed."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for n in sorted(dirnames + filenames):
                paths.append(os.path.join(dirpath, n))
        hardlinks = {}
        for path in sorted(paths, key=lambda p: os.path.relpath(p, root)):
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            ti = _tarinfo(rel, st)
            if stat.S_ISLNK(st.st_mode):
                ti.type = tarfile.SYMTYPE
                ti.linkname = os.readlink(path)
                tar.addfile(ti)
            elif stat.S_ISDIR(st.st_mode):
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in hardlinks:
                    ti.type = tarfile.LNKTYPE
                    ti.linkname = hardlinks[key]
                    tar.addfile(ti)
                    continue
                hardlinks[key] = rel
                ti.size = st.st_size
                with open(path, "rb") as f:
                    tar.addfile(ti, f)
            # sockets, fifos and devices are not needed in test images
    return buf.getvalue()


def random_layer(index, size, seed):
    """One file of size incompressible bytes, the same for the same seed."""
    data = random.Random(f"{seed}/{index}").randbytes(size)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        d = tarfile.TarInfo("data")
        d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, 0
        tar.addfile(d)
        ti = tarfile.TarInfo(f"data/layer{index:03d}.bin")
        ti.size, ti.mode, ti.mtime = size, 0o644, 0
        tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def normalize(ref):
    """(full reference, tag) as containerd names images: docker.io/ab/x:latest."""
    name, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "latest")
    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + (name if "/" in name else "library/" + name)
    return f"{name}:{tag}", tag


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def build(ref, layers, config, compresslevel=6):
    """Returns the archive bytes."""
    blobs = {}
    layer_descs, diff_ids = [], []
    for raw in layers:
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
        gz = gzip.compress(raw, compresslevel=compresslevel, mtime=0)
        d, b = blob(gz)
        blobs[d] = b
        layer_descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                            "digest": d, "size": len(gz)})
    cfg = {
        "architecture": "amd64", "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": "moby-ab mkimage.py"} for _ in layers],
    }
    cfg_d, cfg_b = blob(json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode())
    blobs[cfg_d] = cfg_b
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cfg_d, "size": len(cfg_b)},
        "layers": layer_descs,
    }
    man_d, man_b = blob(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode())
    blobs[man_d] = man_b
    full, tag = normalize(ref)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": man_d, "size": len(man_b),
            "annotations": {"io.containerd.image.name": full,
                            "org.opencontainers.image.ref.name": tag},
        }],
    }
    docker_manifest = [{"Config": "blobs/sha256/" + cfg_d[7:], "RepoTags": [ref],
                        "Layers": ["blobs/sha256/" + d["digest"][7:] for d in layer_descs]}]
    files = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
             ("index.json", json.dumps(index, sort_keys=True).encode()),
             ("manifest.json", json.dumps(docker_manifest, sort_keys=True).encode())]
    files += [("blobs/sha256/" + d[7:], b) for d, b in sorted(blobs.items())]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dname in ("blobs", "blobs/sha256"):
            ti = tarfile.TarInfo(dname)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(ti)
        for name, data in files:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            tar.addfile(ti, io.BytesIO(data))
    return out.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ref", help="image reference, e.g. ab/busybox:latest")
    p.add_argument("--layer-tar", action="append", default=[],
                   help="an uncompressed layer tar (from --layer-only): the first layers")
    p.add_argument("--layer", action="append", default=[], help="a directory: one layer (repeatable)")
    p.add_argument("--layer-only", metavar="DIR", help="write DIR as one uncompressed layer tar and stop")
    p.add_argument("--random-layers", help="comma-separated sizes: one layer of random bytes each")
    p.add_argument("--seed", default="1", help="seed for --random-layers")
    p.add_argument("--cmd", type=json.loads, help='Cmd as a JSON array, e.g. \'["nginx", "-g", "daemon off;"]\'')
    p.add_argument("--env", action="append", default=[], help="KEY=VALUE (repeatable)")
    p.add_argument("--expose", action="append", default=[], help="port, e.g. 80/tcp")
    p.add_argument("--workdir")
    p.add_argument("--user")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    if a.layer_only:
        write(a.output, layer_from_dir(a.layer_only))
        return 0
    if not a.ref:
        p.error("--ref is required")
    layers = []
    for t in a.layer_tar:
        with open(t, "rb") as f:
            layers.append(f.read())
    layers += [layer_from_dir(d) for d in a.layer]
    level = 6
    if a.random_layers:
        try:
            sizes = [parse_size(s) for s in a.random_layers.split(",")]
        except ValueError as e:
            p.error(str(e))
        layers += [random_layer(i, s, a.seed) for i, s in enumerate(sizes)]
        level = 1  # random bytes do not compress; do not spend time trying
    if not layers:
        p.error("no layers: give --layer or --random-layers")
    config = {"Env": a.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if a.cmd:
        config["Cmd"] = a.cmd
    if a.expose:
        config["ExposedPorts"] = {(e if "/" in e else e + "/tcp"): {} for e in a.expose}
    if a.workdir:
        config["WorkingDir"] = a.workdir
    if a.user:
        config["User"] = a.user
    write(a.output, build(a.ref, layers, config, level))
    return 0


def write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())

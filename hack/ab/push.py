"""Push an OCI archive (hack/hosts/testimages/mkimage.py) to a registry over the
Distribution v2 API, without a daemon: push.py ARCHIVE URL REPO TAG"""
import json
import sys
import tarfile
import urllib.error
import urllib.request


def request(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def push(archive, base, repo, tag):
    with tarfile.open(archive) as t:
        files = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    index = json.loads(files["index.json"])
    man_desc = index["manifests"][0]
    manifest = files["blobs/sha256/" + man_desc["digest"][7:]]
    m = json.loads(manifest)
    for desc in [m["config"]] + m["layers"]:
        digest = desc["digest"]
        status, _, _ = request("HEAD", f"{base}/v2/{repo}/blobs/{digest}")
        if status == 200:
            continue
        status, headers, body = request("POST", f"{base}/v2/{repo}/blobs/uploads/")
        if status != 202:
            raise SystemExit(f"push: starting an upload: HTTP {status}: {body[:200]!r}")
        loc = headers["Location"]
        if loc.startswith("/"):
            loc = base + loc
        sep = "&" if "?" in loc else "?"
        status, _, body = request("PUT", f"{loc}{sep}digest={digest}", files["blobs/sha256/" + digest[7:]],
                                  {"Content-Type": "application/octet-stream"})
        if status != 201:
            raise SystemExit(f"push: uploading {digest}: HTTP {status}: {body[:200]!r}")
    status, _, body = request("PUT", f"{base}/v2/{repo}/manifests/{tag}", manifest,
                              {"Content-Type": man_desc["mediaType"]})
    if status != 201:
        raise SystemExit(f"push: manifest: HTTP {status}: {body[:200]!r}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    push(*sys.argv[1:])

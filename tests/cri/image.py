#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""OCI images for the CRI tests, made offline and pushed to a local registry.

  image.py push --registry HOST:PORT --repo NAME --tag TAG --rootfs DIR \\
           [--entrypoint JSON-LIST] [--cmd JSON-LIST] [--env K=V]...
      one layer (DIR as a tar, owned by root), an image config, a
      manifest: pushed with the registry's HTTP API (OCI distribution:
      blob uploads, then the manifest). Prints NAME@DIGEST.

  image.py push-checkpoint --registry HOST:PORT --repo NAME --tag TAG \\
           --archive CHECKPOINT.tar --container NAME
      a checkpoint archive as an OCI image, the way `buildah` makes one
      for Kubernetes: the archive is the one layer, and the index carries
      the annotation org.criu.checkpoint.container.name (and CRI-O's older
      io.kubernetes.cri-o.annotations.checkpoint.name) that tells
      containerd and CRI-O to restore from it.

No registry client is packaged for this (skopeo would do the push; the
registry itself is Debian's docker-registry): the API is three requests.
"""
import argparse
import hashlib
import http.client
import io
import json
import os
import sys
import tarfile

MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar"
# checkpointctl's name (containerd 2.x reads it), and CRI-O's older one
CHECKPOINT_ANNOTATIONS = ("org.criu.checkpoint.container.name", "io.kubernetes.cri-o.annotations.checkpoint.name")


def digest_of(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Registry:
    def __init__(self, hostport, repo):
        self.hostport, self.repo = hostport, repo

    def request(self, method, path, body=None, headers=None, want=(200, 201, 202)):
        c = http.client.HTTPConnection(self.hostport, timeout=60)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status not in want:
            sys.exit(f"image.py: {method} {path}: {r.status} {data[:300]!r}")
        return r, data

    def blob(self, data):
        d = digest_of(data)
        r, _ = self.request("HEAD", f"/v2/{self.repo}/blobs/{d}", want=(200, 404))
        if r.status == 200:
            return d
        r, _ = self.request("POST", f"/v2/{self.repo}/blobs/uploads/", headers={"Content-Length": "0"})
        loc = r.getheader("Location")
        if loc.startswith("http"):
            loc = "/" + loc.split("/", 3)[3]
        sep = "&" if "?" in loc else "?"
        self.request("PUT", f"{loc}{sep}digest={d}", body=data,
                     headers={"Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        return d

    def manifest(self, ref, data, media_type):
        self.request("PUT", f"/v2/{self.repo}/manifests/{ref}", body=data,
                     headers={"Content-Type": media_type, "Content-Length": str(len(data))})
        return digest_of(data)


def layer_of(rootfs):
    buf = io.BytesIO()

    def owned_by_root(ti):
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = 0
        return ti
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name in sorted(os.listdir(rootfs)):
            t.add(os.path.join(rootfs, name), arcname=name, filter=owned_by_root)
    return buf.getvalue()


def image_manifest(reg, layer, config):
    ldig = reg.blob(layer)
    config["rootfs"] = {"type": "layers", "diff_ids": [ldig]}
    cdata = json.dumps(config, sort_keys=True).encode()
    cdig = reg.blob(cdata)
    return {"schemaVersion": 2, "mediaType": MT_MANIFEST,
            "config": {"mediaType": MT_CONFIG, "digest": cdig, "size": len(cdata)},
            "layers": [{"mediaType": MT_LAYER, "digest": ldig, "size": len(layer)}]}


def cmd_push(a):
    reg = Registry(a.registry, a.repo)
    cfg = {"Env": ["PATH=/bin:/usr/bin:/sbin"] + (a.env or []), "WorkingDir": "/"}
    if a.entrypoint:
        cfg["Entrypoint"] = json.loads(a.entrypoint)
    if a.cmd:
        cfg["Cmd"] = json.loads(a.cmd)
    m = image_manifest(reg, layer_of(a.rootfs), {"architecture": "amd64", "os": "linux", "config": cfg})
    d = reg.manifest(a.tag, json.dumps(m, sort_keys=True).encode(), MT_MANIFEST)
    print(f"{a.registry}/{a.repo}@{d}")


def cmd_push_checkpoint(a):
    reg = Registry(a.registry, a.repo)
    with open(a.archive, "rb") as f:
        layer = f.read()
    m = image_manifest(reg, layer, {"architecture": "amd64", "os": "linux", "config": {}})
    # on the manifest too: a pull may keep the platform's manifest as the image's target
    m["annotations"] = {k: a.container for k in CHECKPOINT_ANNOTATIONS}
    mdata = json.dumps(m, sort_keys=True).encode()
    mdig = reg.manifest(digest_of(mdata), mdata, MT_MANIFEST)
    index = {"schemaVersion": 2, "mediaType": MT_INDEX,
             "manifests": [{"mediaType": MT_MANIFEST, "digest": mdig, "size": len(mdata),
                            "platform": {"architecture": "amd64", "os": "linux"}}],
             "annotations": {k: a.container for k in CHECKPOINT_ANNOTATIONS}}
    d = reg.manifest(a.tag, json.dumps(index, sort_keys=True).encode(), MT_INDEX)
    print(f"{a.registry}/{a.repo}@{d}")


def main():
    p = argparse.ArgumentParser(prog="image.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("push")
    s.add_argument("--registry", required=True)
    s.add_argument("--repo", required=True)
    s.add_argument("--tag", required=True)
    s.add_argument("--rootfs", required=True)
    s.add_argument("--entrypoint")
    s.add_argument("--cmd")
    s.add_argument("--env", action="append")
    s.set_defaults(fn=cmd_push)
    s = sub.add_parser("push-checkpoint")
    s.add_argument("--registry", required=True)
    s.add_argument("--repo", required=True)
    s.add_argument("--tag", required=True)
    s.add_argument("--archive", required=True)
    s.add_argument("--container", required=True)
    s.set_defaults(fn=cmd_push_checkpoint)
    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()

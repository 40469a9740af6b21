#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A small CRI client: what crictl does, over containerd's CRI socket.

Debian packages neither crictl nor the kubelet, so the tests drive the CRI
with this: the calls the kubelet makes, in the kubelet's order, with
crictl's subcommands and flags where crictl has them, so that a person
can drive it by hand and docs written for crictl read the same:

  cri.py -r unix://$SOCK runp [--runtime cryo] pod.json        -> pod id
  cri.py -r ... create [--with-pull] POD ctr.json pod.json       -> container id
  cri.py -r ... start ID | stop [-t S] ID | rm [-f] ID
  cri.py -r ... run [--runtime H] [--with-pull] ctr.json pod.json   (runp + create + start)
  cri.py -r ... exec [-s] [--timeout S] ID CMD...   (ExecSync: its output, its exit code)
  cri.py -r ... ps [-a] [-q] [-p POD] [--name RE] [--state S] [-o json|table]
  cri.py -r ... pods [-q] [--name RE] [--namespace NS] [-o json|table]
  cri.py -r ... inspect ID | inspectp POD | info | version | logs ID
  cri.py -r ... pull IMAGE | images [-q] | rmi IMAGE
  cri.py -r ... checkpoint --export ARCHIVE ID
  cri.py -r ... stopp POD | rmp POD
  cri.py -r ... kubelet-checkpoint [--dir D] NAMESPACE POD CONTAINER
        (what the kubelet's POST /checkpoint/{ns}/{pod}/{container} does:
         find the pod and container, CheckpointContainer to
         D/checkpoint-<pod>_<ns>-<container>-<RFC 3339 time>.tar)

Configs are JSON (YAML too where python3-yaml is installed), in the CRI's
own field names as crictl takes them. Like the kubelet, runp and create
add the io.kubernetes.* labels the CRI implementation and the kubelet's
checkpoint API look pods and containers up by, and runp makes the pod's
log directory. `exec` is ExecSync (crictl's --sync): the streaming exec
needs the CRI's streaming server, which this client does not speak.

api.proto (k8s.io/cri-api, from Debian's golang-github-kubernetes-cri-api-dev)
is compiled once into a cache folder with grpc_tools (python3-grpc-tools):
--proto / $CRYO_CRI_PROTO, --gen-dir / $CRYO_CRI_GEN (default
$CRYO_BUILD/tests/cri, else ~/.cache/cryo-cri). A gRPC error is printed
as `cri.py: METHOD: CODE: details` and exits 1.
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import tempfile
import time

DEFAULT_PROTO = "/opt/cryo-containerd/share/cri-api/api.proto"

try:
    import grpc
except ImportError:
    sys.exit("cri.py: needs python3-grpcio (run tests/setup.sh)")


def gen_dir_default():
    if os.environ.get("CRYO_CRI_GEN"):
        return os.environ["CRYO_CRI_GEN"]
    if os.environ.get("CRYO_BUILD"):
        return os.path.join(os.environ["CRYO_BUILD"], "tests", "cri")
    return os.path.join(os.path.expanduser("~"), ".cache", "cryo-cri")


def load_api(proto, gen_dir):
    """Compile api.proto (without its gogoproto options, which only Go uses) once per content."""
    try:
        with open(proto, "rb") as f:
            src = f.read()
    except OSError as e:
        sys.exit(f"cri.py: cannot read the CRI's api.proto `{proto}` ({e.strerror}): run tests/setup-cri.sh")
    digest = hashlib.sha256(src).hexdigest()[:16]
    out = os.path.join(gen_dir, "api-" + digest)
    if not os.path.exists(os.path.join(out, "api_pb2_grpc.py")):
        try:
            from grpc_tools import protoc
        except ImportError:
            sys.exit("cri.py: needs python3-grpc-tools to compile api.proto (run tests/setup.sh)")
        os.makedirs(gen_dir, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".api-", dir=gen_dir)
        text = b"\n".join(line for line in src.split(b"\n") if b"gogoproto" not in line)
        with open(os.path.join(tmp, "api.proto"), "wb") as f:
            f.write(text)
        rc = protoc.main(["protoc", "-I" + tmp, "--python_out=" + tmp, "--grpc_python_out=" + tmp,
                          os.path.join(tmp, "api.proto")])
        if rc != 0:
            sys.exit(f"cri.py: compiling `{proto}` failed (protoc exited {rc})")
        try:
            os.rename(tmp, out)
        except OSError:
            pass  # another run made it meanwhile
    sys.path.insert(0, out)
    import api_pb2  # noqa: E402
    import api_pb2_grpc  # noqa: E402
    return api_pb2, api_pb2_grpc


class Cri:
    def __init__(self, args):
        self.pb, grpc_mod = load_api(args.proto, args.gen_dir)
        self.timeout = args.timeout
        ep = args.runtime_endpoint
        if ep.startswith("unix://"):
            target = "unix:" + ep[len("unix://"):]
        elif ep.startswith("/"):
            target = "unix:" + ep
        else:
            target = ep
        self.channel = grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", 16 << 20)])
        self.rt = grpc_mod.RuntimeServiceStub(self.channel)
        self.img = grpc_mod.ImageServiceStub(self.channel)

    def call(self, stub, method, req, timeout=None):
        try:
            return getattr(stub, method)(req, timeout=timeout or self.timeout)
        except grpc.RpcError as e:
            print(f"cri.py: {method}: {e.code().name}: {e.details()}", file=sys.stderr)
            sys.exit(1)


def load_config(path, msg):
    from google.protobuf import json_format
    with open(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            sys.exit(f"cri.py: `{path}` is not JSON (YAML needs python3-yaml)")
        data = yaml.safe_load(text)
    try:
        json_format.ParseDict(data, msg)
    except json_format.ParseError as e:
        sys.exit(f"cri.py: `{path}`: {e}")
    return msg


def to_dict(msg):
    from google.protobuf import json_format
    return json_format.MessageToDict(msg)


def dump(obj):
    print(json.dumps(obj, indent=2, sort_keys=True))


def kubelet_pod_labels(cfg):
    """The labels the kubelet gives every sandbox (pkg/kubelet/types/labels.go)."""
    md = cfg.metadata
    for k, v in (("io.kubernetes.pod.name", md.name), ("io.kubernetes.pod.namespace", md.namespace),
                 ("io.kubernetes.pod.uid", md.uid)):
        if k not in cfg.labels:
            cfg.labels[k] = v


def kubelet_container_labels(cfg, pod):
    md = pod.metadata
    for k, v in (("io.kubernetes.container.name", cfg.metadata.name), ("io.kubernetes.pod.name", md.name),
                 ("io.kubernetes.pod.namespace", md.namespace), ("io.kubernetes.pod.uid", md.uid)):
        if k not in cfg.labels:
            cfg.labels[k] = v


def resolve(c, kind, ident):
    """A unique id prefix -> the full id, as crictl takes them."""
    if kind == "pod":
        items = c.call(c.rt, "ListPodSandbox", c.pb.ListPodSandboxRequest()).items
    else:
        items = c.call(c.rt, "ListContainers", c.pb.ListContainersRequest()).containers
    ids = [i.id for i in items if i.id.startswith(ident)]
    if len(ids) == 1:
        return ids[0]
    if ident in ids:
        return ident
    if not ids:
        return ident  # let the CRI say it does not know it
    sys.exit(f"cri.py: `{ident}` matches {len(ids)} {kind}s")


def cmd_version(c, a):
    r = c.call(c.rt, "Version", c.pb.VersionRequest(version="v1"))
    print(f"Version:  {r.version}\nRuntimeName:  {r.runtime_name}\nRuntimeVersion:  {r.runtime_version}\n"
          f"RuntimeApiVersion:  {r.runtime_api_version}")


def cmd_info(c, a):
    r = c.call(c.rt, "Status", c.pb.StatusRequest(verbose=True))
    out = {"status": to_dict(r.status)}
    for k, v in r.info.items():
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    dump(out)


def pull(c, image, pod_cfg=None):
    r = c.call(c.img, "PullImage", c.pb.PullImageRequest(image=c.pb.ImageSpec(image=image), sandbox_config=pod_cfg))
    return r.image_ref


def cmd_pull(c, a):
    print(f"Image is up to date for {pull(c, a.image)}")


def cmd_images(c, a):
    r = c.call(c.img, "ListImages", c.pb.ListImagesRequest())
    for i in r.images:
        if a.quiet:
            print(i.id)
        else:
            print(f"{','.join(i.repo_tags) or '<none>'}\t{i.id}\t{i.size}")


def cmd_rmi(c, a):
    for i in a.images:
        c.call(c.img, "RemoveImage", c.pb.RemoveImageRequest(image=c.pb.ImageSpec(image=i)))
        print(f"Deleted: {i}")


def run_pod(c, pod_cfg, runtime):
    kubelet_pod_labels(pod_cfg)
    if pod_cfg.log_directory:
        os.makedirs(pod_cfg.log_directory, exist_ok=True)
    r = c.call(c.rt, "RunPodSandbox", c.pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=runtime or ""))
    return r.pod_sandbox_id


def cmd_runp(c, a):
    print(run_pod(c, load_config(a.config, c.pb.PodSandboxConfig()), a.runtime))


def create(c, pod_id, ctr_cfg, pod_cfg, with_pull):
    kubelet_container_labels(ctr_cfg, pod_cfg)
    kubelet_pod_labels(pod_cfg)
    # the kubelet pulls (when the policy says so) before CreateContainer
    if with_pull:
        pull(c, ctr_cfg.image.image, pod_cfg)
    r = c.call(c.rt, "CreateContainer", c.pb.CreateContainerRequest(
        pod_sandbox_id=pod_id, config=ctr_cfg, sandbox_config=pod_cfg))
    return r.container_id


def cmd_create(c, a):
    pod_cfg = load_config(a.pod_config, c.pb.PodSandboxConfig())
    ctr_cfg = load_config(a.container_config, c.pb.ContainerConfig())
    print(create(c, resolve(c, "pod", a.pod), ctr_cfg, pod_cfg, a.with_pull))


def cmd_start(c, a):
    for i in a.ids:
        i = resolve(c, "container", i)
        c.call(c.rt, "StartContainer", c.pb.StartContainerRequest(container_id=i))
        print(i)


def cmd_run(c, a):
    pod_cfg = load_config(a.pod_config, c.pb.PodSandboxConfig())
    ctr_cfg = load_config(a.container_config, c.pb.ContainerConfig())
    pod_id = run_pod(c, pod_cfg, a.runtime)
    cid = create(c, pod_id, ctr_cfg, pod_cfg, a.with_pull)
    c.call(c.rt, "StartContainer", c.pb.StartContainerRequest(container_id=cid))
    print(cid)


def cmd_exec(c, a):
    if not a.sync:
        print("cri.py: exec runs ExecSync (crictl's --sync): the streaming exec is not implemented", file=sys.stderr)
    cid = resolve(c, "container", a.id)
    # the call's own deadline: a little longer than the command's
    r = c.call(c.rt, "ExecSync", c.pb.ExecSyncRequest(container_id=cid, cmd=a.cmd, timeout=a.exec_timeout),
               timeout=(a.exec_timeout + 10) if a.exec_timeout else None)
    sys.stdout.buffer.write(r.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(r.stderr)
    sys.exit(r.exit_code)


STATE_NAMES = {"created": "CONTAINER_CREATED", "running": "CONTAINER_RUNNING", "exited": "CONTAINER_EXITED",
               "unknown": "CONTAINER_UNKNOWN"}


def label_filter(selector, labels):
    for lab in labels or []:
        k, _, v = lab.partition("=")
        selector[k] = v


def listing(items, a, key, row):
    """crictl's output of a list: JSON (-o json), ids (-q) or a table."""
    items = [x for x in items if not a.name or re.search(a.name, x.metadata.name)]
    if a.output == "json":
        dump({key: [to_dict(x) for x in items]})
        return
    for x in items:
        print(x.id if a.quiet else "\t".join(str(f) for f in row(x)))


def cmd_ps(c, a):
    f = c.pb.ContainerFilter()
    if a.pod:
        f.pod_sandbox_id = resolve(c, "pod", a.pod)
    if a.state:
        f.state.state = c.pb.ContainerState.Value(STATE_NAMES.get(a.state.lower(), a.state.upper()))
    elif not a.all:
        f.state.state = c.pb.CONTAINER_RUNNING
    label_filter(f.label_selector, a.label)
    r = c.call(c.rt, "ListContainers", c.pb.ListContainersRequest(filter=f))
    listing(r.containers, a, "containers", lambda x: (x.id[:13], x.image.image, c.pb.ContainerState.Name(x.state),
                                                      x.metadata.name, x.metadata.attempt, x.pod_sandbox_id[:13]))


def cmd_pods(c, a):
    f = c.pb.PodSandboxFilter()
    label_filter(f.label_selector, a.label)
    if a.namespace:
        f.label_selector["io.kubernetes.pod.namespace"] = a.namespace
    if a.state:
        f.state.state = c.pb.PodSandboxState.Value("SANDBOX_" + a.state.upper())
    r = c.call(c.rt, "ListPodSandbox", c.pb.ListPodSandboxRequest(filter=f))
    listing(r.items, a, "items", lambda x: (x.id[:13], c.pb.PodSandboxState.Name(x.state), x.metadata.name,
                                            x.metadata.namespace, x.runtime_handler))


def with_info(status, info):
    """crictl's shape: containerd's verbose "info" object is the "info" itself."""
    out = {"status": to_dict(status), "info": {}}
    for k, v in info.items():
        try:
            v = json.loads(v)
        except ValueError:
            pass
        if k == "info" and isinstance(v, dict):
            out["info"].update(v)
        else:
            out["info"][k] = v
    return out


def cmd_inspect(c, a):
    for i in a.ids:
        r = c.call(c.rt, "ContainerStatus", c.pb.ContainerStatusRequest(container_id=resolve(c, "container", i),
                                                                        verbose=True))
        dump(with_info(r.status, r.info))


def cmd_inspectp(c, a):
    for i in a.ids:
        r = c.call(c.rt, "PodSandboxStatus", c.pb.PodSandboxStatusRequest(pod_sandbox_id=resolve(c, "pod", i),
                                                                         verbose=True))
        dump(with_info(r.status, r.info))


def cmd_logs(c, a):
    r = c.call(c.rt, "ContainerStatus", c.pb.ContainerStatusRequest(container_id=resolve(c, "container", a.id)))
    try:
        with open(r.status.log_path, errors="replace") as f:
            for line in f:
                # CRI log format: TIME STREAM TAG CONTENT
                parts = line.rstrip("\n").split(" ", 3)
                sys.stdout.write((parts[3] if len(parts) == 4 else line) + ("\n" if parts[2:3] != ["P"] else ""))
    except OSError as e:
        sys.exit(f"cri.py: log `{r.status.log_path}`: {e.strerror}")


def cmd_stop(c, a):
    for i in a.ids:
        i = resolve(c, "container", i)
        c.call(c.rt, "StopContainer", c.pb.StopContainerRequest(container_id=i, timeout=a.timeout_s),
               timeout=a.timeout_s + c.timeout)
        print(i)


def cmd_rm(c, a):
    for i in a.ids:
        i = resolve(c, "container", i)
        if a.force:
            c.call(c.rt, "StopContainer", c.pb.StopContainerRequest(container_id=i, timeout=0))
        c.call(c.rt, "RemoveContainer", c.pb.RemoveContainerRequest(container_id=i))
        print(i)


def cmd_stopp(c, a):
    for i in a.ids:
        i = resolve(c, "pod", i)
        c.call(c.rt, "StopPodSandbox", c.pb.StopPodSandboxRequest(pod_sandbox_id=i))
        print(f"Stopped sandbox {i}")


def cmd_rmp(c, a):
    for i in a.ids:
        i = resolve(c, "pod", i)
        if a.force:
            c.call(c.rt, "StopPodSandbox", c.pb.StopPodSandboxRequest(pod_sandbox_id=i))
        c.call(c.rt, "RemovePodSandbox", c.pb.RemovePodSandboxRequest(pod_sandbox_id=i))
        print(f"Removed sandbox {i}")


def checkpoint(c, cid, location, timeout):
    t0 = time.monotonic()
    c.call(c.rt, "CheckpointContainer", c.pb.CheckpointContainerRequest(
        container_id=cid, location=location, timeout=timeout), timeout=(timeout or c.timeout) + 10)
    return time.monotonic() - t0


def cmd_checkpoint(c, a):
    if not a.export:
        sys.exit("cri.py: checkpoint needs --export ARCHIVE (the CRI writes a tar archive there)")
    for i in a.ids:
        checkpoint(c, resolve(c, "container", i), os.path.abspath(a.export), a.ckpt_timeout)
        print(i)


def cmd_kubelet_checkpoint(c, a):
    """The kubelet's checkpoint API handler (pkg/kubelet/server, CheckpointContainer in kubelet.go)."""
    f = c.pb.PodSandboxFilter(label_selector={"io.kubernetes.pod.name": a.pod,
                                              "io.kubernetes.pod.namespace": a.namespace},
                              state=c.pb.PodSandboxStateValue(state=c.pb.SANDBOX_READY))
    pods = c.call(c.rt, "ListPodSandbox", c.pb.ListPodSandboxRequest(filter=f)).items
    if len(pods) != 1:
        print(f"cri.py: pod {a.namespace}/{a.pod}: {len(pods)} ready sandboxes", file=sys.stderr)
        sys.exit(1)
    cf = c.pb.ContainerFilter(pod_sandbox_id=pods[0].id,
                              label_selector={"io.kubernetes.container.name": a.container})
    ctrs = c.call(c.rt, "ListContainers", c.pb.ListContainersRequest(filter=cf)).containers
    ctrs = [x for x in ctrs if x.state != c.pb.CONTAINER_EXITED] or ctrs
    if not ctrs:
        print(f"cri.py: container {a.container} not found in pod {a.namespace}/{a.pod}", file=sys.stderr)
        sys.exit(1)
    ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    os.makedirs(a.dir, mode=0o700, exist_ok=True)
    path = os.path.join(os.path.abspath(a.dir), f"checkpoint-{a.pod}_{a.namespace}-{a.container}-{ts}.tar")
    secs = checkpoint(c, ctrs[0].id, path, a.ckpt_timeout)
    print(json.dumps({"items": [path], "seconds": round(secs, 3)}))


def main():
    p = argparse.ArgumentParser(prog="cri.py", description=__doc__.split("\n")[0])
    p.add_argument("-r", "--runtime-endpoint",
                   default=os.environ.get("CONTAINER_RUNTIME_ENDPOINT", "unix:///run/containerd/containerd.sock"))
    p.add_argument("-t", "--timeout", type=float, default=120.0, help="seconds for each call (default 120)")
    p.add_argument("--proto", default=os.environ.get("CRYO_CRI_PROTO", DEFAULT_PROTO))
    p.add_argument("--gen-dir", default=gen_dir_default())
    sub = p.add_subparsers(dest="cmd", required=True)

    def arg(*names, **opts):
        return names, opts

    def command(name, fn, *args):
        """subcommand NAME runs FN; ARGS are arg()s, its add_argument calls"""
        s = sub.add_parser(name)
        for names, opts in args:
            s.add_argument(*names, **opts)
        s.set_defaults(fn=fn)

    ids = arg("ids", nargs="+")
    quiet = arg("-q", "--quiet", action="store_true")
    force = arg("-f", "--force", action="store_true")
    runtime = arg("--runtime", default="")
    with_pull = arg("--with-pull", action="store_true")
    output = arg("-o", "--output", default="table", choices=["table", "json"])
    ckpt_timeout = arg("--timeout", dest="ckpt_timeout", type=int, default=0)

    command("version", cmd_version)
    command("info", cmd_info)
    command("pull", cmd_pull, arg("image"))
    command("images", cmd_images, quiet)
    command("rmi", cmd_rmi, arg("images", nargs="+"))
    command("runp", cmd_runp, runtime, arg("config"))
    command("create", cmd_create, with_pull, arg("--no-pull", dest="with_pull", action="store_false"),
            arg("pod"), arg("container_config"), arg("pod_config"))
    command("start", cmd_start, ids)
    command("run", cmd_run, runtime, with_pull, arg("container_config"), arg("pod_config"))
    command("exec", cmd_exec, arg("-s", "--sync", action="store_true"),
            arg("--timeout", dest="exec_timeout", type=int, default=0), arg("id"), arg("cmd", nargs=argparse.REMAINDER))
    command("ps", cmd_ps, arg("-a", "--all", action="store_true"), quiet, arg("-p", "--pod", default=""),
            arg("--name", default=""), arg("--state", default=""), arg("--label", action="append"), output)
    command("pods", cmd_pods, quiet, arg("--name", default=""), arg("--namespace", default=""),
            arg("--state", default=""), arg("--label", action="append"), output)
    command("inspect", cmd_inspect, ids)
    command("inspectp", cmd_inspectp, ids)
    command("logs", cmd_logs, arg("id"))
    command("stop", cmd_stop, arg("-t", "--timeout", dest="timeout_s", type=int, default=10), ids)
    command("rm", cmd_rm, force, ids)
    command("stopp", cmd_stopp, ids)
    command("rmp", cmd_rmp, force, ids)
    command("checkpoint", cmd_checkpoint, arg("--export", default=""), ckpt_timeout, ids)
    command("kubelet-checkpoint", cmd_kubelet_checkpoint, arg("--dir", default="/var/lib/kubelet/checkpoints"),
            ckpt_timeout, arg("namespace"), arg("pod"), arg("container"))

    a = p.parse_args()
    c = Cri(a)
    a.fn(c, a)


if __name__ == "__main__":
    main()

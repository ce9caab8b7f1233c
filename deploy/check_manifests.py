#!/usr/bin/env python3
"""Checks deploy/'s Kubernetes and KServe manifests offline, against glintd.

What runs without a cluster: every YAML document parses; each kind has its
required fields; labels and selectors agree; Services' target ports and
probes' ports are ports of the container; the ports in glintd's --listen and
--http_listen are the container's; the grpc.health.v1 service of the
liveness probes is glintd's --liveness_service and readiness uses the
server's overall status (service ""); the repository is a read-only mount
under --model_repository; the HPA's metric and the Prometheus adapter's
series are families glintd's /metrics page has; the KServe InferenceService
names the ServingRuntime, a format it supports and gRPC (grpc-v2).

glintd is asked, not a list: its flags from `glintd --helpfull`, its
metric families from the /metrics page of a glintd started on loopback.

And the image: each container names glintd's image (localhost/glint:TAG),
keeps its entry point (no `command`), runs as its user (securityContext
runAsUser/runAsGroup, runAsNonRoot); the Deployment's args are the image's
CMD exactly and its container ports are ports the image exposes. The image
is the built one (--image_config: `podman image inspect` of it, as
deploy/container_test.sh passes) or, without one, what deploy/Containerfile
declares (--containerfile).

What is not checked (needs a cluster): that the API server accepts the
objects (schemas of the installed Kubernetes/KServe versions), that probes
pass, scheduling, the Prometheus adapter's queries.

  check_manifests.py --glintd PATH (--containerfile F | --image_config F) FILE.yaml...
  check_manifests.py ... --self_test FILE.yaml...
      also breaks each check on purpose and expects it to be reported.
"""

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml


class Glintd:
    """What the built glintd says about itself."""

    def __init__(self, path):
        self.path = path
        out = subprocess.run([path, "--helpfull"], capture_output=True,
                             text=True, timeout=60)
        text = out.stdout + out.stderr
        # absl's --helpfull: "    --name (help...); default: "value";"
        self.flags = {}
        for m in re.finditer(r"^\s+--([A-Za-z0-9_]+) \((.*?)\);\s*default: (.*?);$",
                             text, re.M | re.S):
            default = m.group(3).strip()
            if default.startswith('"') and default.endswith('"'):
                default = default[1:-1]
            self.flags[m.group(1)] = default
        if "listen" not in self.flags:
            raise SystemExit("cannot read glintd's flags from --helpfull:\n" +
                             text[:2000])
        self.metric_families = self._metric_families()

    def _metric_families(self):
        with tempfile.TemporaryDirectory() as tmp:
            port_file = os.path.join(tmp, "port")
            http_port_file = os.path.join(tmp, "http_port")
            proc = subprocess.Popen(
                [self.path, "--listen=127.0.0.1:0", "--port_file=" + port_file,
                 "--http_listen=127.0.0.1:0",
                 "--http_port_file=" + http_port_file, "--store_dir=",
                 "--log_level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.time() + 30
                while not os.path.exists(port_file):
                    if proc.poll() is not None or time.time() > deadline:
                        raise SystemExit("glintd did not start")
                    time.sleep(0.05)
                with open(http_port_file) as f:
                    http_port = int(f.read().strip())
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/metrics" % http_port,
                        timeout=10) as reply:
                    page = reply.read().decode()
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        return set(re.findall(r"^# TYPE (\S+) ", page, re.M))


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def get(doc, path, default=None):
    """doc["a"]["b"][0]... for path "a.b.0"; `default` if any step is missing."""
    cur = doc
    for key in path.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(key)]
            except (ValueError, IndexError):
                return default
        elif isinstance(cur, dict) and key in cur:
            cur = cur[key]
        else:
            return default
    return cur


class Image:
    """glintd's image: its tags, user, entry point, command and ports."""

    def __init__(self, tags, user, entrypoint, cmd, ports):
        self.tags = tags          # ["localhost/glint:0.1.0", ...]; [] unknown
        self.user = user          # "10001:10001"
        self.entrypoint = entrypoint
        self.cmd = cmd
        self.ports = ports        # {50051, 8000}

    @staticmethod
    def inspected(path):
        """From `podman image inspect IMAGE` (a list of one object)."""
        with open(path) as f:
            doc = json.load(f)
        doc = doc[0] if isinstance(doc, list) else doc
        config = doc.get("Config", {})
        ports = {int(p.split("/")[0]) for p in config.get("ExposedPorts", {})}
        return Image(doc.get("RepoTags", []), config.get("User", ""),
                     config.get("Entrypoint") or [], config.get("Cmd") or [],
                     ports)

    @staticmethod
    def declared(path):
        """From the Containerfile's USER, EXPOSE, ENTRYPOINT and CMD (exec
        form, literal ports: what glintd's Containerfile uses)."""
        with open(path) as f:
            text = re.sub(r"\\\n", " ", f.read())
        user, entrypoint, cmd, ports = "", [], [], set()
        for line in text.splitlines():
            words = line.strip().split(None, 1)
            if len(words) != 2:
                continue
            key, rest = words[0].upper(), words[1].strip()
            try:
                if key == "USER":
                    user = rest
                elif key == "EXPOSE":
                    ports |= {int(p.split("/")[0]) for p in rest.split()}
                elif key == "ENTRYPOINT":
                    entrypoint = json.loads(rest)
                elif key == "CMD":
                    cmd = json.loads(rest)
            except ValueError as e:
                raise SystemExit("%s: cannot read %s %s (exec form and "
                                 "literal ports only): %s" %
                                 (path, key, rest, e))
        return Image([], user, entrypoint, cmd, ports)


class Checker:
    def __init__(self, glintd, docs, image):
        self.glintd = glintd
        self.image = image
        self.docs = docs
        self.errors = []
        self.checked = []

    def error(self, where, what):
        self.errors.append("%s: %s" % (where, what))

    def require(self, doc, where, *paths):
        for p in paths:
            if get(doc, p) in (None, "", [], {}):
                self.error(where, "missing " + p)

    def run(self):
        by_kind = {}
        for source, doc in self.docs:
            where = "%s: %s/%s" % (source, doc.get("kind"),
                                   get(doc, "metadata.name"))
            self.require(doc, where, "apiVersion", "kind", "metadata.name")
            by_kind.setdefault(doc.get("kind"), []).append((where, doc))
        deployments = by_kind.get("Deployment", [])
        for where, doc in deployments:
            self.check_deployment(where, doc)
        for where, doc in by_kind.get("Service", []):
            self.check_service(where, doc, deployments)
        for where, doc in by_kind.get("PodDisruptionBudget", []):
            self.check_pdb(where, doc, deployments)
        for where, doc in by_kind.get("HorizontalPodAutoscaler", []):
            self.check_hpa(where, doc, deployments)
        for where, doc in by_kind.get("ConfigMap", []):
            self.check_adapter(where, doc)
        runtimes = by_kind.get("ServingRuntime", [])
        for where, doc in runtimes:
            self.check_serving_runtime(where, doc)
        for where, doc in by_kind.get("InferenceService", []):
            self.check_inference_service(where, doc, runtimes)
        for kind in ("Deployment", "Service", "PodDisruptionBudget",
                     "HorizontalPodAutoscaler", "ServingRuntime",
                     "InferenceService"):
            if not by_kind.get(kind):
                self.error("manifests", "no " + kind)
        return self.errors

    # --- glintd's container --------------------------------------------------

    def check_container(self, where, pod_spec, container, grpc_port_name):
        """Flags, ports, probes, resources and the repository mount."""
        where = "%s container %s" % (where, container.get("name"))
        self.require(container, where, "name", "image", "args",
                     "resources.requests.cpu", "resources.requests.memory",
                     "resources.limits.memory", "readinessProbe",
                     "livenessProbe")
        args = {}
        for arg in container.get("args", []):
            m = re.match(r"^--([A-Za-z0-9_]+)(?:=(.*))?$", str(arg))
            if not m:
                self.error(where, "argument %r is not --flag=value" % arg)
                continue
            if m.group(1) not in self.glintd.flags:
                self.error(where, "glintd has no flag --%s" % m.group(1))
            args[m.group(1)] = m.group(2) if m.group(2) is not None else "true"
        ports = {p.get("name"): p.get("containerPort")
                 for p in container.get("ports", [])}
        listen = args.get("listen", self.glintd.flags.get("listen"))
        if ports.get(grpc_port_name) != port_of(listen):
            self.error(where, "--listen=%s is not the %s port %s" %
                       (listen, grpc_port_name, ports.get(grpc_port_name)))
        if listen.startswith("127.") or listen.startswith("localhost"):
            self.error(where, "--listen=%s is loopback: unreachable in a pod"
                       % listen)
        http = args.get("http_listen", self.glintd.flags.get("http_listen"))
        if "http" in ports and http and ports["http"] != port_of(http):
            self.error(where, "--http_listen=%s is not the http port %s" %
                       (http, ports["http"]))
        grpc_port = ports.get(grpc_port_name)
        liveness = args.get("liveness_service",
                            self.glintd.flags.get("liveness_service"))
        for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
            probe = container.get(probe_name)
            if probe is None:
                continue
            grpc = probe.get("grpc")
            if grpc is None:
                self.error(where, "%s is not a gRPC probe" % probe_name)
                continue
            port = grpc.get("port")
            if port != grpc_port and port != grpc_port_name:
                self.error(where, "%s probes port %s, glintd serves gRPC on %s"
                           % (probe_name, port, grpc_port))
            service = grpc.get("service", "")
            if probe_name == "readinessProbe" and service != "":
                self.error(where, "readinessProbe must check the server's "
                           "status (service \"\"), not %r" % service)
            if probe_name != "readinessProbe" and service != liveness:
                self.error(where, "%s checks service %r; glintd's "
                           "--liveness_service is %r" %
                           (probe_name, service, liveness))
        repo = args.get("model_repository")
        if repo is not None and pod_spec is not None:
            volumes = {v.get("name"): v for v in pod_spec.get("volumes", [])}
            mounted = False
            for m in container.get("volumeMounts", []):
                path = m.get("mountPath", "").rstrip("/")
                if repo == path or repo.startswith(path + "/"):
                    mounted = True
                    if not m.get("readOnly"):
                        self.error(where, "the repository mount %s is not "
                                   "readOnly" % path)
                    if m.get("name") not in volumes:
                        self.error(where, "mount %s names no volume" % path)
            if not mounted:
                self.error(where, "--model_repository=%s is not under a "
                           "volume mount" % repo)
        mode = args.get("model_control_mode")
        if mode is not None and mode not in ("none", "explicit", "poll"):
            self.error(where, "--model_control_mode=%s" % mode)
        self.check_image(where, container, grpc_port_name == "grpc")
        self.checked.append(where)
        return ports

    def check_image(self, where, container, is_deployment):
        """The container runs glintd's image as the image is made."""
        image = self.image
        name = container.get("image", "")
        # The built image: its repository, and `latest` (what build_image.sh
        # tags besides the version) or one of its tags (a test's own).
        repository, _, tag = name.rpartition(":")
        if image.tags and (
                repository not in {t.rpartition(":")[0] for t in image.tags}
                or (tag != "latest" and name not in image.tags)):
            self.error(where, "image %s is not the built image (%s)" %
                       (name, ", ".join(image.tags)))
        if not name.startswith("localhost/glint:"):
            self.error(where, "image %s is not localhost/glint:TAG, what "
                       "deploy/build_image.sh makes" % name)
        command = container.get("command")
        if command is not None and command != image.entrypoint:
            self.error(where, "command %s replaces the image's entry point %s"
                       % (command, image.entrypoint))
        uid, _, gid = image.user.partition(":")
        security = container.get("securityContext", {}) or {}
        if str(security.get("runAsUser")) != uid:
            self.error(where, "runAsUser %s is not the image's user %s" %
                       (security.get("runAsUser"), uid))
        if gid and str(security.get("runAsGroup")) != gid:
            self.error(where, "runAsGroup %s is not the image's group %s" %
                       (security.get("runAsGroup"), gid))
        if security.get("runAsNonRoot") is not True:
            self.error(where, "runAsNonRoot is not true")
        if not is_deployment:
            return
        if container.get("args", []) != image.cmd:
            self.error(where, "args are not the image's CMD %s" % image.cmd)
        for p in container.get("ports", []):
            if p.get("containerPort") not in image.ports:
                self.error(where, "port %s is not one the image exposes (%s)"
                           % (p.get("containerPort"),
                              ", ".join(str(x) for x in sorted(image.ports))))

    def check_deployment(self, where, doc):
        self.require(doc, where, "spec.replicas", "spec.selector.matchLabels",
                     "spec.template.metadata.labels",
                     "spec.template.spec.containers")
        selector = get(doc, "spec.selector.matchLabels", {}) or {}
        labels = get(doc, "spec.template.metadata.labels", {}) or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            self.error(where, "the selector does not match the pod labels")
        pod = get(doc, "spec.template.spec", {}) or {}
        for c in pod.get("containers", []):
            self.check_container(where, pod, c, "grpc")
        annotations = get(doc, "spec.template.metadata.annotations", {}) or {}
        scrape = annotations.get("prometheus.io/port")
        http_ports = [p.get("containerPort") for c in pod.get("containers", [])
                      for p in c.get("ports", []) if p.get("name") == "http"]
        if scrape is not None and int(scrape) not in http_ports:
            self.error(where, "prometheus.io/port %s is not glintd's HTTP "
                       "port" % scrape)

    @staticmethod
    def pod_labels(deployment):
        return get(deployment, "spec.template.metadata.labels", {}) or {}

    def matching_deployments(self, selector, deployments):
        return [d for _, d in deployments
                if selector and all(self.pod_labels(d).get(k) == v
                                    for k, v in selector.items())]

    def check_service(self, where, doc, deployments):
        self.require(doc, where, "spec.selector", "spec.ports")
        targets = self.matching_deployments(get(doc, "spec.selector"),
                                            deployments)
        if not targets:
            self.error(where, "selects no Deployment's pods")
            return
        names, numbers = set(), set()
        for d in targets:
            for c in get(d, "spec.template.spec.containers", []):
                for p in c.get("ports", []):
                    names.add(p.get("name"))
                    numbers.add(p.get("containerPort"))
        for p in get(doc, "spec.ports", []):
            t = p.get("targetPort", p.get("port"))
            if t not in names and t not in numbers:
                self.error(where, "targetPort %r is no container port" % t)
        self.checked.append(where)

    def check_pdb(self, where, doc, deployments):
        self.require(doc, where, "spec.selector.matchLabels")
        targets = self.matching_deployments(
            get(doc, "spec.selector.matchLabels"), deployments)
        if not targets:
            self.error(where, "selects no Deployment's pods")
        min_available = get(doc, "spec.minAvailable")
        for d in targets:
            if isinstance(min_available, int) and \
                    min_available >= get(d, "spec.replicas", 1):
                self.error(where, "minAvailable %d blocks every eviction of "
                           "%d replicas" % (min_available,
                                            get(d, "spec.replicas", 1)))
        self.checked.append(where)

    def check_hpa(self, where, doc, deployments):
        self.require(doc, where, "spec.scaleTargetRef.name",
                     "spec.minReplicas", "spec.maxReplicas", "spec.metrics")
        name = get(doc, "spec.scaleTargetRef.name")
        if get(doc, "spec.scaleTargetRef.kind") != "Deployment" or \
                name not in [get(d, "metadata.name") for _, d in deployments]:
            self.error(where, "scales no Deployment of these manifests")
        for m in get(doc, "spec.metrics", []):
            metric = get(m, "pods.metric.name")
            if metric is not None and \
                    metric not in self.glintd.metric_families:
                self.error(where, "metric %s is not on glintd's /metrics" %
                           metric)
        if get(doc, "spec.minReplicas", 0) > get(doc, "spec.maxReplicas", 0):
            self.error(where, "minReplicas > maxReplicas")
        self.checked.append(where)

    def check_adapter(self, where, doc):
        config = (doc.get("data") or {}).get("config.yaml")
        if config is None:
            return
        rules = (yaml.safe_load(config) or {}).get("rules", [])
        if not rules:
            self.error(where, "no rules")
        for rule in rules:
            m = re.match(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)",
                         rule.get("seriesQuery", ""))
            if not m or m.group(1) not in self.glintd.metric_families:
                self.error(where, "series %r is not on glintd's /metrics" %
                           rule.get("seriesQuery"))
            for key in ("resources", "metricsQuery"):
                if key not in rule:
                    self.error(where, "rule without " + key)
        self.checked.append(where)

    def check_serving_runtime(self, where, doc):
        self.require(doc, where, "spec.supportedModelFormats",
                     "spec.protocolVersions", "spec.containers")
        if "grpc-v2" not in get(doc, "spec.protocolVersions", []):
            self.error(where, "does not speak grpc-v2 (the Open Inference "
                       "Protocol over gRPC)")
        containers = get(doc, "spec.containers", [])
        if not any(c.get("name") == "kserve-container" for c in containers):
            self.error(where, "KServe runs the container named "
                       "kserve-container; there is none")
        for c in containers:
            self.check_container(where, None, c, "h2c")

    def check_inference_service(self, where, doc, runtimes):
        self.require(doc, where, "spec.predictor.model.modelFormat.name",
                     "spec.predictor.model.runtime",
                     "spec.predictor.model.storageUri")
        model = get(doc, "spec.predictor.model", {}) or {}
        runtime = [d for _, d in runtimes
                   if get(d, "metadata.name") == model.get("runtime")]
        if not runtime:
            self.error(where, "runtime %r is no ServingRuntime here" %
                       model.get("runtime"))
            return
        formats = [f.get("name")
                   for f in get(runtime[0], "spec.supportedModelFormats", [])]
        if get(model, "modelFormat.name") not in formats:
            self.error(where, "format %r is not one the runtime supports" %
                       get(model, "modelFormat.name"))
        if model.get("protocolVersion") != "grpc-v2":
            self.error(where, "protocolVersion is not grpc-v2")
        runtime_ports = {p.get("name"): p.get("containerPort")
                         for c in get(runtime[0], "spec.containers", [])
                         for p in c.get("ports", [])}
        for p in model.get("ports", []):
            if runtime_ports.get(p.get("name")) != p.get("containerPort"):
                self.error(where, "port %s:%s is not the runtime's" %
                           (p.get("name"), p.get("containerPort")))
        self.checked.append(where)


def load(files):
    docs = []
    for path in files:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((os.path.basename(path), doc))
    return docs


# Each breaks one thing; the checker must report it (a check that cannot
# fail proves nothing).
def breakages():
    def deployment(docs):
        return next(d for _, d in docs if d.get("kind") == "Deployment")

    def container(docs):
        return deployment(docs)["spec"]["template"]["spec"]["containers"][0]

    def runtime(docs):
        return next(d for _, d in docs if d.get("kind") == "ServingRuntime")

    def set_arg(c, flag, value):
        c["args"] = [a for a in c["args"] if not a.startswith("--" + flag)]
        c["args"].append("--%s=%s" % (flag, value))

    return {
        "unknown flag": lambda d: container(d)["args"].append("--no_such=1"),
        "listen port": lambda d: set_arg(container(d), "listen",
                                         "0.0.0.0:50052"),
        "loopback": lambda d: set_arg(container(d), "listen",
                                      "127.0.0.1:50051"),
        "http port": lambda d: set_arg(container(d), "http_listen",
                                       "0.0.0.0:8001"),
        "readiness port": lambda d: container(d)["readinessProbe"]["grpc"]
        .update(port=50052),
        "readiness service": lambda d: container(d)["readinessProbe"]["grpc"]
        .update(service="liveness"),
        "liveness service": lambda d: container(d)["livenessProbe"]["grpc"]
        .update(service="alive"),
        "no requests": lambda d: container(d)["resources"].pop("requests"),
        "writable repository": lambda d: container(d)["volumeMounts"][0]
        .update(readOnly=False),
        "repository not mounted": lambda d: set_arg(container(d),
                                                    "model_repository",
                                                    "/elsewhere"),
        "selector": lambda d: deployment(d)["spec"]["selector"]["matchLabels"]
        .update(app="other"),
        "service target": lambda d: next(
            x for _, x in d if x.get("kind") == "Service")["spec"]["ports"][0]
        .update(targetPort="grpcs"),
        "pdb": lambda d: next(
            x for _, x in d if x.get("kind") == "PodDisruptionBudget")["spec"]
        .update(minAvailable=3),
        "hpa metric": lambda d: next(
            x for _, x in d
            if x.get("kind") == "HorizontalPodAutoscaler")["spec"]["metrics"][0]
        ["pods"]["metric"].update(name="glint_queue_length"),
        "adapter series": lambda d: next(
            x for _, x in d if x.get("kind") == "ConfigMap")["data"].update(
                {"config.yaml": "rules:\n- seriesQuery: 'glint_queue{}'\n"
                                "  resources: {}\n  metricsQuery: x\n"}),
        "image tag": lambda d: container(d).update(image="glint:latest"),
        "image user": lambda d: container(d)["securityContext"].update(
            runAsUser=0),
        "image command": lambda d: container(d).update(command=["/bin/sh"]),
        "image args": lambda d: container(d)["args"].pop(),
        "runtime user": lambda d: runtime(d)["spec"]["containers"][0]
        ["securityContext"].update(runAsNonRoot=False),
        "runtime protocol": lambda d: runtime(d)["spec"].update(
            protocolVersions=["v2"]),
        "runtime port": lambda d: set_arg(
            runtime(d)["spec"]["containers"][0], "listen", "0.0.0.0:9001"),
        "isvc runtime": lambda d: next(
            x for _, x in d if x.get("kind") == "InferenceService")["spec"]
        ["predictor"]["model"].update(runtime="triton"),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glintd", required=True)
    parser.add_argument("--self_test", action="store_true")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--containerfile")
    which.add_argument("--image_config")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    glintd = Glintd(args.glintd)
    image = (Image.inspected(args.image_config) if args.image_config
             else Image.declared(args.containerfile))
    docs = load(args.files)
    checker = Checker(glintd, docs, image)
    errors = checker.run()
    print("glintd: %d flags, %d metric families" %
          (len(glintd.flags), len(glintd.metric_families)))
    print("image: %s, user %s, entry point %s, %d args, ports %s" %
          (", ".join(image.tags) or "as the Containerfile declares",
           image.user, image.entrypoint, len(image.cmd), sorted(image.ports)))
    print("checked %d documents of %d files:" % (len(docs), len(args.files)))
    for c in checker.checked:
        print("  " + c)
    for e in errors:
        print("ERROR " + e)
    failed = bool(errors)
    if args.self_test:
        for name, breaking in breakages().items():
            broken = copy.deepcopy(docs)
            breaking(broken)
            found = Checker(glintd, broken, image).run()
            print("self-test %-24s %s" % (name, (found or ["NOT REPORTED"])[0]))
            if not found:
                failed = True
    print("FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

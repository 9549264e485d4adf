"""Static checks of deploy/ (no container engine runs here).

- every YAML document parses; Kubernetes objects have apiVersion, kind and a
  name; each Service's target ports exist on the Deployment it selects; the
  Deployment mounts the ConfigMap it names;
- every flag in deploy/flags/*.flags and in the k8s ConfigMap is a flag the
  built rankwire-server accepts (from --helpfull), and the server parses the
  local flagfile;
- every COPY source in the Dockerfile exists in the repository, and every
  folder the top-level CMakeLists.txt builds is copied;
- every Debian package that owns a shared library the built binaries link
  is installed by the Dockerfile's runtime stage (or is part of the base
  image);
- the fleet objects fit the Deployment: the gRPC Service is headless, the
  HorizontalPodAutoscaler scales it on CPU (and the Deployment leaves the
  replica count to it and requests CPU), the PodDisruptionBudget and the
  topology spread constraints select its pods, the config checksum
  annotation matches the ConfigMap, the readiness probe watches the health
  service the clients watch, and the termination grace period covers the
  server's drain + grace + log flush.

Usage: check_deploy.py <repo root> <rankwire-server> <rankwire-cli> <rankwire-loadgen>
"""

import os
import re
import subprocess
import sys
import unittest

import yaml

ROOT, SERVER, *CLIENTS = sys.argv[1:]
sys.argv = sys.argv[:1]
sys.path.insert(0, os.path.join(ROOT, "deploy", "k8s"))
import config_checksum  # noqa: E402  (deploy/k8s/config_checksum.py)
BASE_IMAGE_PACKAGES = {"libc6", "libstdc++6", "libgcc-s1", "zlib1g"}


def server_flags():
    out = subprocess.run([SERVER, "--helpfull"], capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+--([a-z_0-9]+) \(", out, re.M))


def flags_in(text):
    return [re.match(r"--([a-z_0-9]+)", line.strip()).group(1)
            for line in text.splitlines() if line.strip().startswith("--")]


def yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def k8s_objects():
    by_kind = {}
    k8s = os.path.join(ROOT, "deploy", "k8s")
    for name in sorted(os.listdir(k8s)):
        if name.endswith(".yaml"):
            for doc in yaml_docs(os.path.join(k8s, name)):
                by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def flag_values(text):
    return dict(re.match(r"--([a-z_0-9]+)=?(.*)", line.strip()).groups()
                for line in text.splitlines() if line.strip().startswith("--"))


class DeployTest(unittest.TestCase):
    def test_flagfiles_use_real_flags(self):
        known = server_flags()
        self.assertIn("codec", known)
        flagdir = os.path.join(ROOT, "deploy", "flags")
        for name in os.listdir(flagdir):
            with open(os.path.join(flagdir, name)) as f:
                for flag in flags_in(f.read()):
                    self.assertIn(flag, known, f"{name}: unknown flag --{flag}")
        for doc in yaml_docs(os.path.join(ROOT, "deploy", "k8s", "configmap.yaml")):
            for flag in flags_in(doc["data"]["rankwire.flags"]):
                self.assertIn(flag, known, f"configmap: unknown flag --{flag}")

    def test_kubernetes_objects_fit_together(self):
        objects = []
        k8s = os.path.join(ROOT, "deploy", "k8s")
        for name in sorted(os.listdir(k8s)):
            if not name.endswith(".yaml"):
                continue
            for doc in yaml_docs(os.path.join(k8s, name)):
                for field in ("apiVersion", "kind", "metadata"):
                    self.assertIn(field, doc, f"{name}: missing {field}")
                self.assertTrue(doc["metadata"].get("name"), f"{name}: unnamed object")
                objects.append(doc)
        by_kind = {}
        for o in objects:
            by_kind.setdefault(o["kind"], []).append(o)
        deployments = by_kind["Deployment"]
        for service in by_kind["Service"]:
            selector = service["spec"]["selector"]
            matches = [d for d in deployments
                       if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v
                              for k, v in selector.items())]
            self.assertEqual(len(matches), 1, f"service {service['metadata']['name']}")
            ports = {p["name"] for c in matches[0]["spec"]["template"]["spec"]["containers"]
                     for p in c.get("ports", [])}
            for port in service["spec"]["ports"]:
                self.assertIn(port["targetPort"], ports)
        configmaps = {c["metadata"]["name"] for c in by_kind["ConfigMap"]}
        secrets = {s["metadata"]["name"] for s in by_kind["Secret"]}
        for d in deployments:
            spec = d["spec"]["template"]["spec"]
            for v in spec.get("volumes", []):
                if "configMap" in v:
                    self.assertIn(v["configMap"]["name"], configmaps)
            for c in spec["containers"]:
                for e in c.get("env", []):
                    ref = e.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        self.assertIn(ref["name"], secrets)

    def test_fleet_objects_fit_the_deployment(self):
        by_kind = k8s_objects()
        (deployment,) = [d for d in by_kind["Deployment"] if d["metadata"]["name"] == "rankwire"]
        template = deployment["spec"]["template"]
        labels = template["metadata"]["labels"]
        pod = template["spec"]
        (container,) = pod["containers"]

        # gRPC clients get every pod's address (see the comment in service.yaml).
        grpc_services = [s for s in by_kind["Service"]
                         if labels_match(s["spec"]["selector"], labels)
                         and any(p["name"] == "grpc" for p in s["spec"]["ports"])]
        self.assertTrue(grpc_services, "no Service exposes the grpc port")
        for s in grpc_services:
            self.assertEqual(s["spec"].get("clusterIP"), "None",
                             f"Service {s['metadata']['name']} must be headless")

        (hpa,) = by_kind["HorizontalPodAutoscaler"]
        ref = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((ref["kind"], ref["name"], ref["apiVersion"]),
                         ("Deployment", "rankwire", deployment["apiVersion"]))
        cpu = [m for m in hpa["spec"]["metrics"]
               if m["type"] == "Resource" and m["resource"]["name"] == "cpu"]
        self.assertEqual(len(cpu), 1, "the HPA scales on CPU")
        self.assertEqual(cpu[0]["resource"]["target"]["type"], "Utilization")
        self.assertTrue(0 < cpu[0]["resource"]["target"]["averageUtilization"] <= 90)
        self.assertNotIn("replicas", deployment["spec"], "the HPA owns the replica count")
        self.assertIn("cpu", container["resources"]["requests"],
                      "CPU utilization needs a CPU request")
        self.assertLessEqual(hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"])

        (pdb,) = by_kind["PodDisruptionBudget"]
        self.assertTrue(labels_match(pdb["spec"]["selector"]["matchLabels"], labels))
        # The budget must allow an eviction at the minimum scale, or node
        # drains block forever.
        if "minAvailable" in pdb["spec"]:
            self.assertLess(pdb["spec"]["minAvailable"], hpa["spec"]["minReplicas"])
        else:
            self.assertGreaterEqual(pdb["spec"]["maxUnavailable"], 1)

        spread = pod["topologySpreadConstraints"]
        self.assertTrue(spread)
        for c in spread:
            self.assertTrue(labels_match(c["labelSelector"]["matchLabels"], labels))
            self.assertLessEqual(c["maxSkew"], 1)

        # The annotation that rolls the pods when the flags change.
        annotation = template["metadata"]["annotations"][config_checksum.ANNOTATION]
        self.assertEqual(annotation, config_checksum.checksum(),
                         "stale: run python3 deploy/k8s/config_checksum.py --write")

        # Readiness watches the service the clients' health checking watches.
        cli_help = subprocess.run([CLIENTS[0], "--helpfull"], capture_output=True,
                                  text=True).stdout
        default_health = re.search(r"--health_service .*?default: \"([^\"]*)\"", cli_help, re.S)
        self.assertIsNotNone(default_health, "rankwire-cli has no --health_service flag")
        self.assertEqual(container["readinessProbe"]["grpc"]["service"], default_health.group(1))
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        self.assertEqual(container["readinessProbe"]["grpc"]["port"], ports["grpc"])

        (configmap,) = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == "rankwire-flags"]
        flags = flag_values(configmap["data"]["rankwire.flags"])
        self.assertEqual(int(flags["port"]), ports["grpc"])
        self.assertEqual(int(flags["metrics_port"]), ports["metrics"])
        self.assertEqual(template["metadata"]["annotations"]["prometheus.io/port"],
                         str(ports["metrics"]))
        stop_ms = sum(int(flags.get(f, 0)) for f in ("drain_ms", "shutdown_grace_ms",
                                                     "log_flush_ms"))
        self.assertGreater(int(flags["drain_ms"]), 0, "pods must drain before stopping")
        self.assertGreater(pod["terminationGracePeriodSeconds"] * 1000, stop_ms)

    def test_compose_file_parses(self):
        (compose,) = yaml_docs(os.path.join(ROOT, "deploy", "compose.yaml"))
        self.assertEqual(set(compose["services"]), {"redis", "rankwire"})
        self.assertEqual(compose["services"]["rankwire"]["build"]["dockerfile"], "deploy/Dockerfile")

    def test_dockerfile_copies_every_folder_the_build_needs(self):
        # The unconditional add_subdirectory lines of the top-level
        # CMakeLists.txt (tests and benchmarks are inside if-blocks), and the
        # CMake modules folder it includes from.
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            needed = set(re.findall(r"^add_subdirectory\((\w+)\)", f.read(), re.M)) | {"cmake"}
        with open(os.path.join(ROOT, "deploy", "Dockerfile")) as f:
            copied = set(re.findall(r"^COPY (?!--from)(\S+) ", f.read(), re.M))
        self.assertFalse(needed - copied, f"the Dockerfile's build stage lacks {needed - copied}")

    def test_dockerfile_copies_exist_and_runtime_has_every_library(self):
        with open(os.path.join(ROOT, "deploy", "Dockerfile")) as f:
            dockerfile = f.read()
        for src in re.findall(r"^COPY (?!--from)(\S+)", dockerfile, re.M):
            self.assertTrue(os.path.exists(os.path.join(ROOT, src)), f"COPY {src}: missing")
        runtime = dockerfile.split("FROM debian:bookworm-slim", 1)[1]
        installed = set(re.findall(r"\b(lib[a-z0-9+.\-]+|ca-certificates)\b",
                                   runtime.split("rm -rf", 1)[0]))
        needed = {}  # library path -> the binaries that link it
        for binary in [SERVER, *CLIENTS]:
            libs = re.findall(r"=> (/\S+)", subprocess.run(["ldd", binary], capture_output=True,
                                                            text=True).stdout)
            for lib in libs:
                needed.setdefault(os.path.realpath(lib), []).append(binary)
        # One dpkg query for all of them (one per library is slow).
        owners = {}
        out = subprocess.run(["dpkg", "-S", *sorted(needed)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            package, path = line.split(": ", 1)
            owners[path] = package.split(":")[0]
        self.assertIn("libgrpc++1.51", owners.values(), "dpkg -S found no owners")
        for lib, binaries in sorted(needed.items()):
            owner = owners.get(lib)
            if owner and owner not in BASE_IMAGE_PACKAGES:
                self.assertIn(owner, installed, f"{binaries[0]} needs {lib} from {owner}")

    def test_server_accepts_the_local_flagfile(self):
        # --helpfull after the flagfile: parses every flag, prints, exits.
        result = subprocess.run(
            [SERVER, "--flagfile=" + os.path.join(ROOT, "deploy", "flags", "local.flags"),
             "--helpfull"], capture_output=True, text=True)
        self.assertNotIn("ERROR", result.stderr)


if __name__ == "__main__":
    unittest.main()

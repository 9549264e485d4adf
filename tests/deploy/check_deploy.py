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
  image).

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
        for binary in [SERVER, *CLIENTS]:
            libs = re.findall(r"=> (/\S+)", subprocess.run(["ldd", binary], capture_output=True,
                                                            text=True).stdout)
            for lib in libs:
                owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True,
                                       text=True).stdout.split(":")[0]
                if owner and owner not in BASE_IMAGE_PACKAGES:
                    self.assertIn(owner, installed, f"{binary} needs {lib} from {owner}")

    def test_server_accepts_the_local_flagfile(self):
        # --helpfull after the flagfile: parses every flag, prints, exits.
        result = subprocess.run(
            [SERVER, "--flagfile=" + os.path.join(ROOT, "deploy", "flags", "local.flags"),
             "--helpfull"], capture_output=True, text=True)
        self.assertNotIn("ERROR", result.stderr)


if __name__ == "__main__":
    unittest.main()

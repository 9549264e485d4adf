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
  replica count to it and requests CPU, with a limit equal to the request,
  as OPERATING.md says), the PodDisruptionBudget and the topology spread
  constraints select its pods, the config checksum annotation matches the
  ConfigMap, the readiness probe watches the health service the clients
  watch, and the termination grace period covers the server's drain +
  grace + log flush;
- the routine apply paths (deploy/k8s, and deploy/tls with TLS on) are
  rendered as `kubectl apply -k` would apply them (`kubectl kustomize`) and
  hold no Secret; every Secret they refer to is made by
  deploy/k8s/secrets/, from files that are not in the repository;
- the server's flags do not drift: production.flags (the image), the
  ConfigMap and compose.yaml give every flag the same value (the Redis
  address aside), drain, grace and flush above all;
- what the docs quote the server saying about an empty TLS certificate is
  what it says.

Kubernetes manifests are rendered with kubectl's built-in kustomize
(`kubectl kustomize`), or a standalone `kustomize build`; the check fails if
neither is on PATH (the project's machine image has kubectl).

Usage: check_deploy.py <repo root> <rankwire-server> <rankwire-cli> <rankwire-loadgen>
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
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


def kustomize(directory):
    """The objects `kubectl apply -k <directory>` applies, as YAML text."""
    if shutil.which("kubectl"):
        command = ["kubectl", "kustomize", directory]
    elif shutil.which("kustomize"):
        command = ["kustomize", "build", directory]
    else:
        raise AssertionError("neither kubectl nor kustomize is on PATH: the deploy checks render "
                             "deploy/k8s as `kubectl apply -k` would")
    r = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{r.stderr}")
    return r.stdout


def rendered(directory):
    return [d for d in yaml.safe_load_all(kustomize(directory)) if d is not None]


def k8s_objects(directory=None):
    """The routine apply's objects (deploy/k8s rendered), by kind."""
    by_kind = {}
    for doc in rendered(directory or os.path.join(ROOT, "deploy", "k8s")):
        by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def secrets_made_by_the_secrets_folder():
    """Renders deploy/k8s/secrets with stand-in files (as an operator would
    with real ones) in a copy of the folder; the Secrets by name."""
    source = os.path.join(ROOT, "deploy", "k8s", "secrets")
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "secrets")
        shutil.copytree(source, folder)
        for name in ("redis-password", "tls.crt", "tls.key", "ca.crt"):
            with open(os.path.join(folder, name), "w") as f:
                f.write(f"stand-in {name}\n")
        return {d["metadata"]["name"]: d for d in rendered(folder)}


def referenced_secrets(pod_spec):
    """Names of the Secrets a pod template uses (env and volumes)."""
    names = set()
    for c in pod_spec["containers"]:
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                names.add(ref["name"])
    for v in pod_spec.get("volumes", []):
        if "secret" in v:
            names.add(v["secret"]["secretName"])
    return names


def server_defaults():
    """Every server flag's default, as --helpfull prints it."""
    out = subprocess.run([SERVER, "--helpfull"], capture_output=True, text=True).stdout
    defaults = {}
    for entry in re.split(r"\n    --", out):
        name = re.match(r"([a-z_0-9]+) \(", entry)
        # "; default: <value>;", the last in the entry (help text may hold
        # semicolons), possibly on a line of its own.
        values = re.findall(r";\s+default: (.*?);", entry, re.S)
        if name and values:
            defaults[name.group(1)] = values[-1].strip('"')
    return defaults


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
        made = secrets_made_by_the_secrets_folder()
        for path in ("deploy/k8s", "deploy/tls"):
            objects = rendered(os.path.join(ROOT, path))
            for doc in objects:
                for field in ("apiVersion", "kind", "metadata"):
                    self.assertIn(field, doc, f"{path}: missing {field}")
                self.assertTrue(doc["metadata"].get("name"), f"{path}: unnamed object")
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
            # rankwire-models is made apart, from model files (like the
            # Secrets, a routine apply must not replace what serves).
            configmaps = {c["metadata"]["name"] for c in by_kind["ConfigMap"]} | {"rankwire-models"}
            for d in deployments:
                spec = d["spec"]["template"]["spec"]
                for v in spec.get("volumes", []):
                    if "configMap" in v:
                        self.assertIn(v["configMap"]["name"], configmaps)
                # Every Secret used is one deploy/k8s/secrets makes, with the key used.
                for name in referenced_secrets(spec):
                    self.assertIn(name, made, f"{path}: {d['metadata']['name']} uses Secret "
                                              f"{name}, which deploy/k8s/secrets does not make")
                for c in spec["containers"]:
                    for e in c.get("env", []):
                        ref = e.get("valueFrom", {}).get("secretKeyRef")
                        if ref:
                            self.assertIn(ref["key"], made[ref["name"]]["data"])

    def test_routine_apply_holds_no_secret(self):
        # What `kubectl apply -k` applies on the routine paths (a flag or
        # image change, the codec switch): nothing that can overwrite a
        # Secret, and no placeholder password anywhere in it.
        for path in ("deploy/k8s", "deploy/tls"):
            text = kustomize(os.path.join(ROOT, path))
            kinds = [d["kind"] for d in yaml.safe_load_all(text) if d]
            self.assertIn("Deployment", kinds, f"{path} rendered nothing useful")
            self.assertNotIn("Secret", kinds, f"{path}: the routine apply holds a Secret")
            self.assertNotIn("change-me", text)
        # Nor do the files an old habit (`kubectl apply -f deploy/k8s/`) applies.
        k8s = os.path.join(ROOT, "deploy", "k8s")
        for name in sorted(os.listdir(k8s)):
            if name.endswith(".yaml") and name != "kustomization.yaml":
                kinds = [d.get("kind") for d in yaml_docs(os.path.join(k8s, name))]
                self.assertNotIn("Secret", kinds, f"deploy/k8s/{name} holds a Secret")

    def test_secrets_come_from_files_outside_the_repository(self):
        made = secrets_made_by_the_secrets_folder()
        self.assertEqual(set(made), {"rankwire-redis", "rankwire-tls"})
        self.assertEqual(set(made["rankwire-redis"]["data"]), {"password"})
        self.assertEqual(set(made["rankwire-tls"]["data"]), {"tls.crt", "tls.key", "ca.crt"})
        folder = os.path.join(ROOT, "deploy", "k8s", "secrets")
        with open(os.path.join(folder, "kustomization.yaml")) as f:
            generators = yaml.safe_load(f)["secretGenerator"]
        sources = [entry.split("=")[-1] for g in generators for entry in g["files"]]
        # None of the source files is committed; the folder's .gitignore
        # keeps them out (git check-ignore says so for each).
        tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "deploy/k8s/secrets"],
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(sorted(tracked), ["deploy/k8s/secrets/.gitignore",
                                           "deploy/k8s/secrets/kustomization.yaml"])
        ignored = subprocess.run(["git", "-C", ROOT, "check-ignore", "--no-index",
                                  *[f"deploy/k8s/secrets/{s}" for s in sources]],
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(len(ignored), len(sources), f"not ignored: {set(sources) - set(ignored)}")
        # Without the files (a fresh clone), rendering fails instead of
        # making empty Secrets.
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(os.path.join(folder, "kustomization.yaml"), tmp)
            with self.assertRaises(AssertionError):
                kustomize(tmp)

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
        # A CPU limit equal to the request, in whole CPUs: the server sizes
        # its threads from the cgroup's quota (base/cpu_budget.h), and
        # OPERATING.md states the same number.
        cpu_request = str(container["resources"]["requests"]["cpu"])
        self.assertEqual(str(container["resources"].get("limits", {}).get("cpu")), cpu_request,
                         "the CPU limit must equal the request")
        self.assertRegex(cpu_request, r"^[1-9][0-9]*$", "whole CPUs")
        with open(os.path.join(ROOT, "docs", "OPERATING.md")) as f:
            operating = f.read()
        self.assertIn(f"{cpu_request}-CPU request", operating)
        self.assertIn(f"CPU limit of {cpu_request}", operating)
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

    def test_server_flags_do_not_drift(self):
        # The image starts the server with production.flags; the pods add
        # the ConfigMap's flagfile and the Deployment's args after it, compose
        # its command: each of those must say what production.flags (or the
        # server's default) says. Only the Redis Service's name is the
        # site's own.
        site_specific = {"redis_addr", "redis_password", "flagfile"}
        defaults = server_defaults()
        self.assertIn("drain_ms", defaults)
        with open(os.path.join(ROOT, "deploy", "flags", "production.flags")) as f:
            image = dict(defaults, **flag_values(f.read()))
        by_kind = k8s_objects()
        (configmap,) = [c for c in by_kind["ConfigMap"] if c["metadata"]["name"] == "rankwire-flags"]
        (deployment,) = [d for d in by_kind["Deployment"] if d["metadata"]["name"] == "rankwire"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        (compose,) = yaml_docs(os.path.join(ROOT, "deploy", "compose.yaml"))
        layers = {
            "the ConfigMap": flag_values(configmap["data"]["rankwire.flags"]),
            "the Deployment's args": flag_values("\n".join(container.get("args", []))),
            "compose.yaml": flag_values("\n".join(compose["services"]["rankwire"]["command"])),
        }
        for where, flags in layers.items():
            for name, value in flags.items():
                if name in site_specific:
                    continue
                self.assertIn(name, defaults, f"{where}: unknown flag --{name}")
                self.assertEqual(value, image[name],
                                 f"--{name}={value} in {where}, but {image[name]} in "
                                 f"deploy/flags/production.flags (the image's)")
        # The shutdown timings, one value everywhere (production.flags says
        # why 5 s), and every stop waits long enough for them.
        stop_ms = sum(int(image[f]) for f in ("drain_ms", "shutdown_grace_ms", "log_flush_ms"))
        self.assertEqual(int(image["drain_ms"]), 5000)
        grace = compose["services"]["rankwire"]["stop_grace_period"]
        self.assertTrue(grace.endswith("s"), grace)
        self.assertGreater(int(grace[:-1]) * 1000, stop_ms, "compose's stop_grace_period")

    def test_documented_tls_error_is_what_the_server_prints(self):
        # OPERATING.md quotes the start-up error of an empty certificate (a
        # Secret made from an empty file); the server must print exactly that.
        with open(os.path.join(ROOT, "docs", "OPERATING.md")) as f:
            quoted = re.search(r"`(rankwire-server: INVALID_ARGUMENT: --tls_cert_file=(\S+) "
                               r"holds no PEM block)`", f.read())
        self.assertIsNotNone(quoted, "OPERATING.md quotes no empty-certificate error")
        with tempfile.TemporaryDirectory() as tmp:
            cert = os.path.join(tmp, "tls.crt")
            open(cert, "w").close()
            r = subprocess.run([SERVER, "--port=0", "--metrics_port=-1", "--address=127.0.0.1",
                                "--log_mode=none", f"--tls_cert_file={cert}",
                                f"--tls_key_file={cert}"],
                               capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(quoted.group(1).replace(quoted.group(2), cert), r.stdout + r.stderr)

    def test_compose_file_parses(self):
        (compose,) = yaml_docs(os.path.join(ROOT, "deploy", "compose.yaml"))
        self.assertEqual(set(compose["services"]), {"redis", "rankwire"})
        self.assertEqual(compose["services"]["rankwire"]["build"]["dockerfile"], "deploy/Dockerfile")

    def test_redis_expires_as_the_benchmarks_measured(self):
        # The logs' Redis in compose and in Kubernetes runs with the settings
        # the log benchmarks start their Redis with (bench/harness.py), so
        # the memory BENCHMARKS.md reports is what a deployed Redis holds.
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        try:
            import harness  # noqa: E402  (bench/harness.py)
        finally:
            sys.path.pop(0)
        (compose,) = yaml_docs(os.path.join(ROOT, "deploy", "compose.yaml"))
        redis_pods = [d for d in yaml_docs(os.path.join(ROOT, "deploy", "k8s", "redis.yaml"))
                      if d and d.get("kind") == "Deployment"]
        self.assertEqual(len(redis_pods), 1)
        (container,) = redis_pods[0]["spec"]["template"]["spec"]["containers"]
        wanted = list(harness.LOG_REDIS_ARGS)
        for where, args in (("compose.yaml", compose["services"]["redis"]["command"]),
                            ("k8s/redis.yaml", container["args"])):
            if args[0] == "redis-server":
                args = args[1:]
            pairs = dict(zip(args[::2], args[1::2]))  # Every flag here takes one value.
            for flag, value in zip(wanted[::2], wanted[1::2]):
                self.assertEqual(pairs.get(flag), value, f"{where}: {flag} {value}")

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

    def test_models_come_from_a_volume_and_load(self):
        # --model names a directory that the Deployment mounts from the
        # rankwire-models ConfigMap, and the image carries a default there.
        with open(os.path.join(ROOT, "deploy", "flags", "production.flags")) as f:
            model = flag_values(f.read())["model"]
        by_kind = k8s_objects()
        (deployment,) = [d for d in by_kind["Deployment"] if d["metadata"]["name"] == "rankwire"]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        self.assertIn(model, mounts, "the Deployment mounts no volume at --model")
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(volumes[mounts[model]].get("configMap", {}).get("name"),
                         "rankwire-models")
        with open(os.path.join(ROOT, "deploy", "Dockerfile")) as f:
            self.assertIn(f"COPY deploy/models/rankwire.manifest {model}/rankwire.manifest",
                          f.read())
        # Both manifests load with the server's loader and checks: the
        # ConfigMap's (its files side by side, as the mount holds them) and
        # the image's (its absolute path mapped to the repository's models).
        shipped = os.path.join(ROOT, "model", "models")
        with tempfile.TemporaryDirectory() as configmap, tempfile.TemporaryDirectory() as image:
            shutil.copy(os.path.join(ROOT, "deploy", "k8s", "models", "rankwire.manifest"),
                        configmap)
            for name in os.listdir(shipped):
                shutil.copy(os.path.join(shipped, name), configmap)
            with open(os.path.join(ROOT, "deploy", "models", "rankwire.manifest")) as f:
                text = f.read()
            self.assertIn("/usr/share/rankwire/models/", text)
            with open(os.path.join(image, "rankwire.manifest"), "w") as f:
                f.write(text.replace("/usr/share/rankwire/models/", shipped + "/"))
            for directory in (configmap, image):
                result = subprocess.run([CLIENTS[0], "--model_features=" + directory],
                                        capture_output=True, text=True)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("model ecom_search_lr@", result.stdout)

    def test_server_accepts_the_local_flagfile(self):
        # --helpfull after the flagfile: parses every flag, prints, exits.
        result = subprocess.run(
            [SERVER, "--flagfile=" + os.path.join(ROOT, "deploy", "flags", "local.flags"),
             "--helpfull"], capture_output=True, text=True)
        self.assertNotIn("ERROR", result.stderr)


if __name__ == "__main__":
    unittest.main()

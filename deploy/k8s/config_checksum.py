"""The checksum of the rankwire ConfigMap that deployment.yaml carries as a
pod-template annotation. Changing the flags changes the checksum, which
changes the pod template, which makes the Deployment roll its pods (a
ConfigMap change alone restarts nothing).

  python3 deploy/k8s/config_checksum.py           # print it
  python3 deploy/k8s/config_checksum.py --write   # update deployment.yaml

tests/deploy/check_deploy.py fails if the annotation is stale.
"""

import hashlib
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ANNOTATION = "rankwire.io/config-checksum"


def checksum(configmap_path=os.path.join(HERE, "configmap.yaml")):
    """sha256 of the ConfigMap's data, as canonical JSON (sorted keys)."""
    with open(configmap_path) as f:
        (doc,) = [d for d in yaml.safe_load_all(f) if d]
    canonical = json.dumps(doc["data"], sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def main():
    value = checksum()
    if "--write" in sys.argv[1:]:
        path = os.path.join(HERE, "deployment.yaml")
        with open(path) as f:
            text = f.read()
        new, n = re.subn(r'(%s: )"[^"]*"' % re.escape(ANNOTATION), r'\g<1>"%s"' % value, text)
        if n != 1:
            sys.exit(f"{path}: expected one {ANNOTATION} annotation, found {n}")
        with open(path, "w") as f:
            f.write(new)
    print(value)


if __name__ == "__main__":
    main()

"""deploy/kubernetes/*.yaml against the Dask operator's own CRD schemas (the
``openAPIV3Schema`` of each resource, as shipped in the dask-kubernetes package's Helm
chart): types and required fields by jsonschema, and every field known to the schema
(``kubectl --validate=strict``: Kubernetes would drop an unknown one silently).
Skipped where dask-kubernetes is not installed (``pip install --no-deps
dask-kubernetes`` is enough: only its files are read, nothing is imported)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))


def _crds() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of each Dask CRD."""
    spec = importlib.util.find_spec("dask_kubernetes")  # finds it without importing it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("dask-kubernetes is not installed (its CRD schemas are read)")
    folder = (Path(next(iter(spec.submodule_search_locations))) / "operator" / "deployment"
              / "helm" / "dask-kubernetes-operator" / "crds")
    out = {}
    for f in folder.glob("*.yaml"):
        crd = yaml.safe_load(f.read_text())
        for v in crd["spec"]["versions"]:
            out[(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])] = \
                v["schema"]["openAPIV3Schema"]
    return out


def unknown_fields(doc: Any, schema: dict[str, Any], where: str = "") -> list[str]:
    """The paths of ``doc``'s fields that ``schema`` does not declare (where it lists
    its properties and neither preserves unknown fields nor allows additional ones)."""
    if isinstance(doc, list):
        items = schema.get("items", {})
        return [p for i, x in enumerate(doc) for p in unknown_fields(x, items, f"{where}[{i}]")]
    if not isinstance(doc, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    out = []
    for k, v in doc.items():
        if props is not None and k in props:
            out += unknown_fields(v, props[k], f"{where}.{k}")
        elif isinstance(extra, dict):
            out += unknown_fields(v, extra, f"{where}.{k}")
        elif props is not None and extra is not True:
            out.append(f"{where}.{k}")
    return out


def _problems(doc: dict[str, Any], schemas: dict) -> list[str]:
    import jsonschema

    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in schemas:
        return [f"no Dask CRD for {key}"]
    schema = schemas[key]
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "metadata")}
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(body)]
    return errors + [f"{p}: unknown field" for p in unknown_fields(body, schema)]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_each_manifest_is_valid_against_the_operators_crd(path):
    schemas = _crds()
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        assert doc["metadata"]["name"]
        assert _problems(doc, schemas) == [], path.name


def test_a_misspelt_or_mistyped_field_is_caught():
    schemas = _crds()
    doc = yaml.safe_load((ROOT / "deploy" / "kubernetes" / "daskcluster.yaml").read_text())
    doc["spec"]["worker"]["replica"] = doc["spec"]["worker"].pop("replicas")
    assert _problems(doc, schemas) == [".spec.worker.replica: unknown field"]
    doc["spec"]["worker"]["replicas"] = "sixteen"
    del doc["spec"]["worker"]["replica"]
    assert any("replicas" in p and "integer" in p for p in _problems(doc, schemas))

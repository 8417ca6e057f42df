"""Importers for external tool manifests (currently the published FinToolBench manifest)."""

from finmcp.tool_specs.importers.fintoolbench import ManifestError, load_manifest, load_manifest_text

__all__ = ["ManifestError", "load_manifest", "load_manifest_text"]

"""The FinToolBench importer: the published manifest (``tools_all_annotated.jsonl``) as ToolSpecs.

``manifest`` checks and converts the manifest's lines; ``facts`` reads facts from the source text,
``outputs``/``columns`` plan the output schemas, ``entities`` infers what tools consume and produce,
``text``/``glossary`` write finmcp's own English text; their tables are data files in ``data/``
(``tables`` reads them). ``build`` writes the shipped ``fintool760`` inventory::

    python -m finmcp.tool_specs.importers.fintoolbench.build --manifest /path/to/tools.jsonl [--output PATH]
"""

from finmcp.tool_specs.importers.fintoolbench.manifest import ManifestError, load_manifest, load_manifest_text

__all__ = ["ManifestError", "load_manifest", "load_manifest_text"]

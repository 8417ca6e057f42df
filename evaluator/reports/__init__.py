"""Reports: the whole report dict of one run (:mod:`evaluator.reports.pipeline`) and its Markdown
(:mod:`evaluator.reports.markdown`) and self-contained HTML (:mod:`evaluator.reports.html`) renderings."""

"""The HTML report: one self-contained page of where the cache went cold.

``data`` turns the structures ``analyze --json`` and ``audit`` are built from into the
page's data (never prompt text: only fields ``analyze --json`` already shows); ``page``
embeds that data, the page's own script and style and the vendored chart library
(Apache ECharts, ``assets/``, see ``assets/NOTICE.md``) into one HTML file that needs
no server and fetches nothing. No Python dependency beyond the core install.
"""

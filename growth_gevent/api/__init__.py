"""The REST API as a Falcon app built from a store and a config (``app.create_app``): the route table
(``routes``), the resources (``resources``), query parameters (``params``), formats and ETags
(``representation``), preconditions (``conditional``), request bodies under their bounds (``body``), CSV
both ways (``csv_format``), paging cursors (``cursor``), tokens for writes (``auth``), CORS (``cors``),
``/docs`` (``swagger_ui``), the streamed export (``export``), the facets (``facets``), gzip
(``compression``) and the OpenAPI document (``openapi.json``). Store errors become HTTP statuses in one
place, ``app``.

May import: ``http``, ``ops``, ``stores``, ``core``.
"""

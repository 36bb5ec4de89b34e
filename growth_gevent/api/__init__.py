"""The REST API as a Falcon app built from a store and a config (``app.create_app``): the route table
(``routes``) and its router (``router``: a record's path found first), the resources (``resources``), query
parameters (``params``), formats and ETags (``representation``), preconditions (``conditional``), request
bodies read under their bounds (``body_reader``) and the memory they may hold (``body_budget``), strict JSON
bodies (``strict_json``), bulk bodies made into records (``bulk_parser``), CSV both ways (``csv_format``),
paging cursors (``cursor``), tokens for writes (``auth``), CORS (``cors``), ``/docs`` (``swagger_ui``), the
``/explore`` page (``explore``) and the files served as they are (``static``), the streamed export
(``export``), the facets (``facets``), gzip (``compression``) and the OpenAPI document (``openapi.json``).
Store errors become HTTP statuses in one place, ``app``.

May import: ``http``, ``ops``, ``stores``, ``core``.
"""

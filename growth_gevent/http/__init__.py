"""HTTP/1.1 under the Falcon app: the request-head parser with no sockets (``head``), the pywsgi adapter
(``handler``), the server with its connection cap, accept loop and drain (``server``), and the raw answers
and the ``{"msg"}`` body (``responses``). Knows nothing of records' storage.

May import: ``core``.
"""

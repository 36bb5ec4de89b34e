"""HTTP/1.1 under the Falcon app: the request-head parser and the body readers, with no sockets (``head``,
``bodies``), the connection from accept to close (``handler``), the server with its connection cap,
accept loop and drain (``server``), the raw answers and the ``{"msg"}`` body (``responses``), and the tables
of PEP 3333's names the connection looks up (``wsgi``). Knows nothing of records' storage.

May import: ``core``.
"""

"""HTTP/1.1 under the Falcon app: the request-head parser and the body readers, with no sockets (``head``,
``bodies``), the connection from accept to close (``handler``), the server with its connection cap,
accept loop and drain (``server``), and the raw answers and the ``{"msg"}`` body (``responses``). Knows
nothing of records' storage.

May import: ``core``.
"""

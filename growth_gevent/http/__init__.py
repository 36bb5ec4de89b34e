"""HTTP/1.1 under the Falcon app: the request-head parser and the body readers, with no sockets (``head``,
``bodies``), the connection from accept to close (``handler``) and the exchange of each request on it
(``exchange``), the server with its connection cap, accept loop and drain (``server``), the raw answers and
the ``{"msg"}`` body (``responses``), and the tables of PEP 3333's names the exchange looks up (``wsgi``).
Knows nothing of records' storage.

May import: ``core``.
"""

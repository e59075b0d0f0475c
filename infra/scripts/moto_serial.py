"""moto's server with DynamoDB made as atomic as DynamoDB.

DynamoDB runs each conditional write and each TransactWriteItems atomically: a transaction is
serializable against every other write of its items ("Isolation levels for DynamoDB
transactions", Amazon DynamoDB Developer Guide). moto's threaded server does not: its
TransactWriteItems checks and applies items one by one and rolls back by restoring a copy of the
whole table, so two transactions on different threads can both pass their conditions, and a
rollback can erase another thread's committed write. A stand-in that lenient lets a race pass
that DynamoDB would refuse, or fail one DynamoDB would never produce.

So every DynamoDB request here holds one lock while moto serves it (DynamoDB calls never wait on
each other for long); SQS and the rest stay concurrent, since a long-polling ReceiveMessage
must not hold up the table.

Usage: python moto_serial.py HOST PORT
"""

import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


class SerialDynamoDB:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
            with self.lock:
                # The response body is produced inside the lock: moto's work is done by then.
                return list(self.app(environ, start_response))
        return self.app(environ, start_response)


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, SerialDynamoDB(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()

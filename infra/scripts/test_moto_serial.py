"""The emulator's isolation: moto_serial.SerialDynamoDB serves one DynamoDB request at a time
and lets every other request overlap. Run with the moto venv's python (make unit does)."""

import threading
import time

from moto_serial import SerialDynamoDB


class Recorder:
    """A WSGI app that takes 50 ms and records how many requests it served at once."""

    def __init__(self):
        self.active = 0
        self.most = 0
        self.guard = threading.Lock()

    def __call__(self, environ, start_response):
        with self.guard:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(0.05)
        with self.guard:
            self.active -= 1
        start_response("200 OK", [])
        return [b"{}"]


def most_at_once(target):
    recorder = Recorder()
    app = SerialDynamoDB(recorder)
    environ = {"HTTP_X_AMZ_TARGET": target} if target else {}
    threads = [threading.Thread(target=lambda: app(dict(environ), lambda *a: None)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return recorder.most


def main():
    dynamodb = most_at_once("DynamoDB_20120810.TransactWriteItems")
    other = most_at_once("")
    assert dynamodb == 1, f"DynamoDB requests overlapped: {dynamodb} at once"
    assert other > 1, f"other requests were serialised too ({other} at once): the check cannot see overlap"
    print(f"moto_serial: DynamoDB 1 at a time, other requests {other} at once")


if __name__ == "__main__":
    main()

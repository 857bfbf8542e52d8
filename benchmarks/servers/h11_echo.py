"""The h11-echo child: the most minimal HTTP/1.1 keep-alive echo server (physical limit).

``python h11_echo.py PORT``: blocking sockets, one connection at a time, no event loop,
no JSON. Each POST's body is echoed back as an ``application/json`` response with a
``Content-Length``. No HTTP server in Python built on h11 can answer faster than this
on the machine.
"""

import socket
import sys

import h11


def serve(conn: socket.socket) -> None:
    http = h11.Connection(h11.SERVER)
    body: list[bytes] = []
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            data = conn.recv(1 << 20)
            http.receive_data(data)
            if not data:
                return
        elif isinstance(event, h11.Data):
            body.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            payload = b"".join(body)
            body.clear()
            headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
            conn.sendall(
                http.send(h11.Response(status_code=200, headers=headers))
                + http.send(h11.Data(data=payload))
                + http.send(h11.EndOfMessage())
            )
            http.start_next_cycle()
        elif isinstance(event, h11.ConnectionClosed):
            return


def main() -> None:
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            try:
                serve(conn)
            except (OSError, h11.ProtocolError):
                pass


if __name__ == "__main__":
    main()

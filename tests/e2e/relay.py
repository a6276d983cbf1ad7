"""A TCP relay between an agent and the server, for partition tests: it
passes bytes both ways until told to hold what the server sends back for a
while (the requests still go through, so the server hears them). When the
hold ends, what the server sent during it is delivered and from then on
nothing passes either way: a network that answered late, then broke."""
import socket
import threading
import time


class Relay:
    def __init__(self, target_port):
        self.target_port = target_port
        self.lock = threading.Lock()
        self.cut_at = None  # time.monotonic(): answers wait for it, then nothing passes
        self.conns = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def hold_then_cut(self, seconds):
        """From now, answers are held for seconds and then delivered; after
        that, every connection is cut for good."""
        with self.lock:
            self.cut_at = time.monotonic() + seconds
        threading.Thread(target=self._cut_when_due, daemon=True).start()

    def _is_cut(self):
        return self.cut_at is not None and time.monotonic() >= self.cut_at

    def _accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            if self._is_cut():
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, server]
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, src, dst, answers):
        try:
            while True:
                data = src.recv(65536)
                if not data or (self._is_cut() and not answers):
                    break
                if answers and self.cut_at is not None:  # held, then let out as the cut comes
                    time.sleep(max(0.0, self.cut_at - time.monotonic()))
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _cut_when_due(self):
        """Idle connections have no bytes by which to notice the cut; the
        held answers (to requests that came before it) get a moment to go
        out first."""
        while not self._is_cut():
            time.sleep(0.01)
        time.sleep(0.05)
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        with self.lock:
            for s in self.conns:
                s.close()

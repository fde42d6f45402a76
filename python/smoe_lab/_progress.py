"""The progress bar of Client.watch: a line redrawn in a terminal, an
updating output in Jupyter (IPython.display), plain lines otherwise."""

import sys


def _in_jupyter():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def describe(s, width=30):
    """'[#####.....] 12/16 done (10 ok, 2 failed), 3 running, 1 pending' for a sweep dict."""
    c = s.get("counts", {})
    total = max(int(c.get("total", 0)), 1)
    finished = sum(int(c.get(k, 0)) for k in ("succeeded", "failed", "cancelled", "pruned"))
    fill = int(width * finished / total)
    text = "%s [%s%s] %d/%d done (%d ok, %d failed), %d running, %d pending" % (
        s.get("sweep_id", "?"), "#" * fill, "." * (width - fill), finished,
        int(c.get("total", 0)), int(c.get("succeeded", 0)), int(c.get("failed", 0)),
        int(c.get("running", 0)), int(c.get("pending", 0)))
    if s.get("unschedulable"):
        text += " - " + s["unschedulable"]
    return text


class _Line:
    """One progress state for IPython's display: an HTML bar, the text as its plain form."""

    def __init__(self, text, done=0, total=0):
        self.text, self.done, self.total = text, done, total

    def __repr__(self):
        return self.text

    def _repr_html_(self):
        import html
        return ('<div><progress value="%d" max="%d" style="width:20em"></progress> '
                '<code>%s</code></div>' % (self.done, max(self.total, 1),
                                           html.escape(self.text)))


def _finished(s):
    c = s.get("counts", {})
    return (sum(int(c.get(k, 0)) for k in ("succeeded", "failed", "cancelled", "pruned")),
            int(c.get("total", 0)))


class Progress:
    """Shows a sweep's progress; update(sweep) redraws, close() ends the line."""

    def __init__(self, name, file=None):
        self.file = file or sys.stderr
        self.last = None
        self.handle = None
        self.tty = hasattr(self.file, "isatty") and self.file.isatty()
        if _in_jupyter():
            from IPython.display import display
            self.handle = display(_Line(describe({"sweep_id": name})), display_id=True)

    def update(self, s):
        text = describe(s)
        if text == self.last:
            return
        self.last = text
        if self.handle is not None:
            self.handle.update(_Line(text, *_finished(s)))
        elif self.tty:
            self.file.write("\r\x1b[K" + text)
            self.file.flush()
        else:
            self.file.write(text + "\n")
            self.file.flush()

    def close(self):
        if self.handle is None and self.tty and self.last is not None:
            self.file.write("\n")
            self.file.flush()

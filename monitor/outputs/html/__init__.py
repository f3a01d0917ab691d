"""What people look at: charts and HTML blocks shared by the live page (``monitor.http``) and the
report file (:mod:`monitor.outputs.html.report`), and the page's static assets (``static/``, package data)."""

"""``dltrace ui``: the lineage explorer in the browser (docs/ui.md).

``app.py`` is the web app (Starlette: routes, the token, Spark work off the event loop),
``answers.py`` its answers from the Python API, ``static/`` the one page (plain JavaScript,
no build step).  Imported only by ``dltrace ui``: Starlette and uvicorn are the optional
``dltrace[ui]``.
"""

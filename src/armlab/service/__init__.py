"""The ask/tell HTTP service (``armlab serve``) and the ``armlab resume`` command.

Import :func:`armlab.service.app.create_app` to embed the service in another ASGI server;
the web stack (FastAPI, uvicorn) is the ``live`` extra.
"""

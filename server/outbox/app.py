"""The Celery app: one queue per device type for gradings and problem validations, a
``results`` queue served next to the API, where reports are written to the database, and a
``callbacks`` queue beside it, where batch items' verdicts are POSTed to their clients. Jobs
are sent by name (`server.outbox.task_names`), so nothing that sends one imports a task; a
worker imports the tasks (server/worker/) as it starts."""

from __future__ import annotations

import warnings

from celery import Celery
from sqlalchemy.exc import SADeprecationWarning

from server.outbox import embedded  # noqa: F401  (registers the embedded broker's scheme)
from server.settings import Settings, get_settings

RESULTS_QUEUE = "results"
CALLBACKS_QUEUE = "callbacks"

# kombu's SQLAlchemy transport (the embedded broker) still declares lazy="noload"; the
# warning says nothing a user can act on.
warnings.filterwarnings(
    "ignore", message="The ``noload`` loader strategy is deprecated", category=SADeprecationWarning
)


def make_celery(settings: Settings) -> Celery:
    app = Celery("kerneljudge", broker=settings.resolved_broker_url)
    transport_options: dict[str, object] = {}
    if not settings.broker_is_embedded:
        # Redis hands an unacknowledged message out again after this long; a grading that
        # is still running must never be given to a second worker.
        transport_options["visibility_timeout"] = settings.visibility_timeout_s
        transport_options["unacked_restore_interval"] = settings.restore_interval_s
        transport_options["unacked_restore_throttle"] = 1
    app.conf.update(
        # The tasks, and a worker's shutdown that always ends.
        imports=[
            "server.worker.gpu",
            "server.worker.recorders",
            "server.worker.callbacks",
            "server.worker.shutdown",
        ],
        task_serializer="json",
        accept_content=["json"],
        # Reports go to our own tables through the results step, never to a result backend.
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        # A grading is acknowledged only once it has finished, and handed out again when its
        # worker dies, so SIGKILL or a lost host never loses a submission.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_transport_options=transport_options,
        broker_connection_retry_on_startup=True,
        # A send after a commit must not hold a request for long when the broker is down:
        # the outbox's sweeper sends it again.
        broker_connection_timeout=2,
        task_create_missing_queues=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        enable_utc=True,
    )
    return app


celery_app = make_celery(get_settings())

"""Where jobs leave the service: the Celery app (`app`), the names of its tasks
(`task_names`), the outbox every job is written to and its sweeper (`jobs`), the fair order
gradings are sent in (`dispatch`), a waiting submission's place in it (`places`), what the
broker holds (`broker`) and the embedded broker (`embedded`). Services import it; it
imports no service: a service tells it how to build a job's message (`jobs.register`)."""

"""Where jobs leave the service and how workers run them: the Celery app (`app`), the outbox
every job is written to and its sweeper (`jobs`, `broker`), the GPU worker's context and its
jobs (`context`, `gpu`), and the recorders that write results on the service side
(`recorders`)."""

"""KernelJudge's service: settings, database, REST API, queue tasks and command line."""

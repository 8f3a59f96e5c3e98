"""A real install on this machine, for the tests and the bench scripts alike: throwaway
PostgreSQL clusters and Redis servers on ports of their own (`rig.cluster`), `kerneljudge
serve`, workers and users started as a user would start them (`rig.processes`), and the
production shape under faults: workers killed, Redis and PostgreSQL restarted (`rig.faults`).
Never shipped: the package that `pip install` builds holds only `kerneljudge`."""

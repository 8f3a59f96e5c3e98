"""The tasks, which call services: a grading worker's context and its jobs (`context`,
`gpu`), the recorders that write results on the service side (`recorders`), and a worker's
shutdown (`shutdown`). Jobs reach them through the outbox (server/outbox/)."""

"""The web pages: server-rendered HTML from the same app as the REST API, with accounts,
sessions and admin pages."""

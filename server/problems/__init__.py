"""Problems: the built-in set, adding and listing them."""

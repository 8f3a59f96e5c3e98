"""`python -m kerneljudge`: the `kerneljudge` command."""

from kerneljudge import main

if __name__ == "__main__":
    main()

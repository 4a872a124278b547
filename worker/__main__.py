"""``python -m worker`` is ``canary``; ``run`` is also the ``canary`` script's entry point."""

from worker import startup


def run() -> None:
    startup.pause()  # before the imports (worker.startup)
    from worker.cli import main

    main()


if __name__ == "__main__":
    run()

"""The wheel's layout, which pyproject.toml alone cannot state: server/, grader/ and
sandbox/ ship inside kerneljudge/ (kerneljudge/__init__.py says why), so an install puts
one top-level name into site-packages."""

from setuptools import find_namespace_packages, setup

INSIDE = ("server", "grader", "sandbox")

setup(
    package_dir={"kerneljudge": "kerneljudge", **{f"kerneljudge.{p}": p for p in INSIDE}},
    packages=[
        "kerneljudge",
        *(
            f"kerneljudge.{name}"
            for name in find_namespace_packages(
                include=[pattern for p in INSIDE for pattern in (p, f"{p}.*")]
            )
        ),
    ],
    package_data={
        "kerneljudge.server": [
            "migrations/*.mako",
            "migrations/versions/*.py",
            "web/templates/*.html",
            "web/templates/admin/*.html",
            "web/static/*",
        ]
    },
)

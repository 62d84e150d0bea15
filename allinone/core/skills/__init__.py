"""Skills: the `/v1/skills` catalog (skills, their immutable versions and bundles) and
what environments need from it.

- `bundles.py`: pure. An upload (a zip, or the files of a directory) becomes one
  normalised zip with a `SKILL.md` at its root, its front matter read and bounded.
- `bodies.py`: the one place a bundle's bytes are stored and read back.
- `catalog.py`: the domain: create, version, default pointer, delete, and resolving an
  environment's `skills` entries into what a workspace installs.

May import `allinone.core.errors`, `allinone.core.ids` and `storage`; never the HTTP layer.
"""

"""Shared test kits: fake docker/nvidia-smi and ports (smokekit), compose (composekit), bisect
seeding (bisectkit), hostile GitHub servers (hostile_github), a seeded store for site pages
(site_seed). Importable as `kits.<name>` because pyproject puts tests/ on the path."""

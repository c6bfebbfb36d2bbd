"""Code generated from api/hopper/v1/*.proto by gen.sh (make py-gen). Do not edit."""

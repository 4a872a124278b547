"""Producers turn outside sources (files, stdin, registries, mail) into submitted artifacts."""

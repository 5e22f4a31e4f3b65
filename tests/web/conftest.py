"""Fixtures for the web service tests: a REST session on the test broker's web port."""
from __future__ import annotations

import pytest
import requests


class Admin:
    """requests against base_url; every call returns the requests.Response."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.session = requests.Session()

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.base_url + path, timeout=30, **kwargs)

    def put(self, path: str, **kwargs) -> requests.Response:
        return self.session.put(self.base_url + path, timeout=30, **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        return self.session.post(self.base_url + path, timeout=30, **kwargs)

    def delete(self, path: str, **kwargs) -> requests.Response:
        return self.session.delete(self.base_url + path, timeout=30, **kwargs)


@pytest.fixture
def admin(broker) -> Admin:
    admin = Admin(broker.broker.web_service_url)
    yield admin
    admin.session.close()


def rest_path(topic: str) -> str:
    """persistent://t/ns/x -> /persistent/t/ns/x, as the v2 REST paths spell a topic."""
    domain, rest = topic.split("://", 1)
    return f"/{domain}/{rest}"


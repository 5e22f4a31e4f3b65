# minipulsar-geo-test:<version> - the official Apache Pulsar Python client (pulsar-client, from a
# wheel pip downloaded on the host) for docker/geo-test's checks (docker/geo_check.py, mounted at
# /geo). Built by docker/build-image; the context holds `wheels/`.
ARG BASE=minipulsar-base:bookworm

FROM ${BASE} AS venv
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/geo \
 && /opt/geo/bin/pip install --no-index --no-cache-dir --find-links /tmp/wheels pulsar-client

FROM ${BASE}
COPY --from=venv /opt/geo /opt/geo
ENV PATH=/opt/geo/bin:$PATH PYTHONUNBUFFERED=1
WORKDIR /geo
CMD ["sleep", "infinity"]

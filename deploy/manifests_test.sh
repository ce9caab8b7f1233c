#!/usr/bin/env bash
# //deploy:manifests_test: deploy/check_manifests.py over every manifest,
# against the glintd of this build.
set -euo pipefail
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec /usr/bin/python3 deploy/check_manifests.py --self_test \
  --glintd runtime/server/glintd --containerfile deploy/Containerfile \
  deploy/kubernetes/*.yaml deploy/kserve/*.yaml

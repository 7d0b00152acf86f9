"""The fixture's ini options, in a pytest run of its own (pytester): a project's pytest.ini
names its CRD directory and every test's server has the CRDs."""

import os

CRDS = os.path.join(os.path.dirname(__file__), "crds")


def test_the_crd_dir_ini_option_installs_the_crds(pytester):
    pytester.makeini(f"[pytest]\ncrd_apiserver_crd_dir = {os.path.relpath(CRDS, pytester.path)}\n")
    pytester.makepyfile(
        """
        from kubernetes import client

        def test_crontabs_are_served(crd_apiserver):
            custom = client.CustomObjectsApi(crd_apiserver.api_client)
            listed = custom.list_namespaced_custom_object(
                "stable.example.com", "v1", "default", "crontabs")
            assert listed["items"] == []
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)

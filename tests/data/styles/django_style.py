"""Django-style code: a form field, a queryset helper and text utilities, as Django 5.1 shapes them."""

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.utils.functional import cached_property


def capfirst(x):  # Capitalize the first letter of a string.
    if not x:
        return x
    if not isinstance(x, str):
        x = str(x)
    return x[0].upper() + x[1:]


def slugify(value, allow_unicode=False):
    # Convert spaces or repeated dashes to single dashes. Remove characters
    # that aren't alphanumerics, underscores, or hyphens.
    value = str(value)
    if allow_unicode:
        value = unicodedata.normalize("NFKC", value)
    else:
        value = (
            unicodedata.normalize("NFKD", value)
            .encode("ascii", "ignore")
            .decode("ascii")
        )
    value = re.sub(r"[^\w\s-]", "", value.lower())
    return re.sub(r"[-\s]+", "-", value).strip("-_")


class Field:
    widget = None
    default_error_messages = {
        "required": "This field is required.",
    }

    def __init__(
        self,
        *,
        required=True,
        label=None,  # the human-readable name
        initial=None,
    ):
        # required -- Boolean that specifies whether the field is required.
        #             True by default.
        self.required, self.label, self.initial = required, label, initial

    def clean(self, value): # Validate the given value and return its "cleaned" value.
        value = self.to_python(value)
        self.validate(value)
        return value

    def validate(self, value):
        if value in self.empty_values and self.required:
            raise ValidationError(self.error_messages["required"], code="required")

    @cached_property
    def error_messages(self):
        # Collect the messages of every class in the MRO, the most derived last.
        messages = {}
        for c in reversed(self.__class__.__mro__):
            messages.update(getattr(c, "default_error_messages", {}))
        return messages


class QuerySet:
    def _filter_or_exclude(self, negate, args, kwargs):
        if (args or kwargs) and self.query.is_sliced:
            raise TypeError("Cannot filter a query once a slice has been taken.")
        clone = self._chain()
        if self._defer_next_filter:
            self._defer_next_filter = False
            clone._deferred_filter = negate, args, kwargs
        else:
            clone._filter_or_exclude_inplace(negate, args, kwargs)
        return clone

    def exists(self):
        # An empty result cache means the query has run and found nothing.
        if self._result_cache is None:
            return self.query.has_results(using=self.db)
        return bool(self._result_cache)
